package planner

// Reasons are stable identifiers: clients match on them, so they never change
// once released. Messages beside them are for humans and may change.

// Node decision reasons. ReasonAdvertised is the only one of an included node.
const (
	ReasonAdvertised = "Advertised"

	// Kilo itself does not count the node (kg's own Ready rule).
	ReasonNoPublicKey      = "NoPublicKey"
	ReasonInvalidPublicKey = "InvalidPublicKey"
	ReasonNoPodCIDR        = "NoPodCIDR"
	ReasonInvalidPodCIDR   = "InvalidPodCIDR"
	ReasonNoEndpoint       = "NoEndpoint"
	ReasonNotReady         = "NotReady"
	ReasonDuplicateNode    = "DuplicateNodeName"

	// Kilo counts the node, but its addresses fail containment.
	ReasonPodCIDROutsideDeclared = "PodCIDROutsideDeclared"
	ReasonDuplicatePodCIDR       = "DuplicatePodCIDR"
	ReasonCIDRClaimedTwice       = "CIDRClaimedTwice"

	// The node's group cannot be exported; every member carries the reason.
	ReasonMalformedEndpoint      = "MalformedEndpoint"
	ReasonNoEndpointNoKeepalive  = "NoEndpointNoKeepalive"
	ReasonWireGuardIPOutsideCIDR = "WireGuardIPOutsideCIDR"
	ReasonWireGuardCIDRExhausted = "WireGuardCIDRExhausted"
	ReasonInvalidWireGuardCIDR   = "InvalidWireGuardCIDR"
	ReasonNoAdvertisedMember     = "NoAdvertisedMember"
)

// Node note reasons: something left out or ignored without skipping the node.
const (
	NoteInternalIPNotAdvertised = "InternalIPNotAdvertised"
	NotePodCIDRNotAdvertised    = "PodCIDRNotAdvertised"
	NoteMalformedAnnotation     = "MalformedAnnotation"
	NoteMalformedEndpoint       = "MalformedEndpoint"
	NoteStaleWireGuardIP        = "StaleWireGuardIP"
	NoteLocationIPDropped       = "AllowedLocationIPDropped"
)

// Conflict reasons: something is kept out of the mesh.
const (
	ConflictInvalidNetwork         = "InvalidNetwork"
	ConflictNetworkOverlap         = "NetworkOverlap"
	ConflictCIDRClaimedTwice       = "CIDRClaimedTwice"
	ConflictDuplicateWireGuardIP   = "DuplicateWireGuardIP"
	ConflictOverlapsTargetNetwork  = "OverlapsTargetNetwork"
	ConflictCIDRClaimedByForeign   = "CIDRClaimedByForeignPeer"
	ConflictCIDRClaimedByKept      = "CIDRClaimedByKeptPeer"
	ConflictPublicKeyInUse         = "PublicKeyInUse"
	ConflictDuplicatePublicKey     = "DuplicatePublicKey"
	ConflictPublicKeyOfTargetNode  = "PublicKeyOfTargetNode"
	ConflictNameTaken              = "PeerNameTaken"
	ConflictInvalidPeer            = "InvalidPeer"
	ConflictEmptyPeer              = "NoAllowedIPsLeft"
	ConflictDuplicateNode          = "DuplicateNodeName"
	ConflictWireGuardCIDRExhausted = "WireGuardCIDRExhausted"
	ConflictWireGuardIPOutsideCIDR = "WireGuardIPOutsideCIDR"
)

// Warning reasons: the plan stands, but traffic may not flow.
const (
	WarningClusterUnreachable      = "ClusterUnreachable"
	WarningNoReadyGroups           = "NoReadyGroups"
	WarningUnknownCluster          = "UnknownCluster"
	WarningGranularityDisagreement = "GranularityDisagreement"
	WarningUnknownGranularity      = "UnknownGranularity"
	WarningKeepaliveNotSent        = "KeepaliveNotSent"
	WarningPrivateEndpoint         = "PrivateEndpoint"
	WarningInternalIPsNotAdvert    = "InternalIPsNotAdvertised"
	WarningWireGuardIPMismatch     = "WireGuardIPMismatch"
	WarningExtraNetworksUnattached = "ExtraNetworksUnattached"
	WarningLocationIPsDropped      = "AllowedLocationIPsDropped"
	WarningPodCIDRsNotAdvertised   = "PodCIDRsNotAdvertised"
	WarningMalformedAnnotations    = "MalformedAnnotations"
)

// Reasons a managed Peer is kept as it is.
const (
	KeptSourceUnreachable = "SourceUnreachable"
	KeptNoReadyGroups     = "SourceHasNoReadyGroups"
)
