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
	// The member cluster's Node is heavier than the server keeps of one.
	ReasonNodeTooLarge = "NodeTooLarge"
	// The member's Node has a name Kubernetes would not store, or a
	// location that cannot name a group (too long, not printable).
	ReasonInvalidNodeName = "InvalidNodeName"
	ReasonInvalidLocation = "InvalidLocation"

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

// IsNetworkGroupReason reports whether a group is left out for the mesh's
// networks (a wireguardCIDR that is malformed, too small or not kg's
// --subnet; members whose addresses all fail containment) rather than for
// its leader's endpoint, which is the nodes' state.
func IsNetworkGroupReason(reason string) bool { return groupReasonIsNetwork[reason] }

// groupReasonIsNetwork classes every reason a group is not exported for.
var groupReasonIsNetwork = map[string]bool{
	ReasonInvalidWireGuardCIDR:   true,
	ReasonWireGuardCIDRExhausted: true,
	ReasonWireGuardIPOutsideCIDR: true,
	// Kilo counts the members, so they failed containment: their pod
	// CIDRs lie outside the declared ones or are claimed twice.
	ReasonNoAdvertisedMember:    true,
	ReasonMalformedEndpoint:     false,
	ReasonNoEndpointNoKeepalive: false,
}

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
	// The mesh's access to the local cluster withholds them (HostAccess).
	ConflictHostAccessDenied  = "HostAccessDenied"
	ConflictOutsideHostAccess = "OutsideHostAccess"
	// Another mesh, created earlier, claims them on a cluster both use.
	ConflictCIDRClaimedByOtherMesh = "CIDRClaimedByOtherMesh"
	// More Peers, or heavier ones, than the grants allow on the local cluster.
	ConflictTooManyHostPeers = "TooManyHostPeers"
	// An endpoint the server's address policy refuses on the local cluster.
	ConflictEndpointNotAllowed = "EndpointNotAllowed"
	// Two entries of the mesh reach one cluster (one verified identity).
	ConflictSameCluster = "SameCluster"
	// Two clusters are behind NAT and no cluster relays between them.
	ConflictNoRelay = "NoRelay"
)

// IsNetworkConflict reports whether a conflict is about the mesh's
// networks: declared networks that are unusable or overlap, or addresses
// that collide with each other, with the target's networks, or with Peers
// the mesh does not manage (another mesh's, or hand-made). These are what
// the NetworksValid condition counts, since the user fixes them in the
// networks of the spec or of the clusters. Unknown reasons are not.
func IsNetworkConflict(reason string) bool { return conflictIsNetwork[reason] }

// conflictIsNetwork classes every conflict reason above; a test fails when
// one is missing, so that a new conflict is classed on purpose.
var conflictIsNetwork = map[string]bool{
	ConflictInvalidNetwork:         true,
	ConflictNetworkOverlap:         true,
	ConflictCIDRClaimedTwice:       true,
	ConflictDuplicateWireGuardIP:   true,
	ConflictOverlapsTargetNetwork:  true,
	ConflictCIDRClaimedByForeign:   true,
	ConflictWireGuardCIDRExhausted: true, // the declared wireguardCIDR is too small
	ConflictWireGuardIPOutsideCIDR: true, // kg's --subnet differs from the declared wireguardCIDR
	// Another mesh, created earlier, routes the addresses on a cluster both
	// meshes use: this mesh's networks collide with another tenant's.
	ConflictCIDRClaimedByOtherMesh: true,

	// An address waits for a Peer the plan keeps as it is on the target:
	// its source is unreachable or has no ready group, or its group is
	// withheld for a key conflict, each reported on its own. The networks
	// are fine (a clash between two clusters' networks is NetworkOverlap,
	// reported as well), and the address is advertised once the kept Peer
	// is updated or deleted, so it must not send users looking for a
	// network problem.
	ConflictCIDRClaimedByKept: false,
	// Keys and names: kg tells Peers apart by public key, Kubernetes by name.
	ConflictPublicKeyInUse:        false,
	ConflictDuplicatePublicKey:    false,
	ConflictPublicKeyOfTargetNode: false,
	ConflictNameTaken:             false,
	// A Peer kg would reject, as built (its key, endpoint or keepalive) or
	// as kept (edited by hand): the object is broken, not the networks.
	ConflictInvalidPeer: false,
	// Every address of a Peer was left out for one of the conflicts above,
	// which are classed on their own.
	ConflictEmptyPeer: false,
	// The member cluster lists one node name twice: its data, not its networks.
	ConflictDuplicateNode: false,
	// What the mesh may do on the local cluster is the Granted condition's
	// to say: an administrator's grant or a user's rights decide it, not
	// the networks.
	ConflictHostAccessDenied:  false,
	ConflictOutsideHostAccess: false,
	// The grants bound how much the mesh puts on the local cluster; its
	// networks may be fine.
	ConflictTooManyHostPeers: false,
	// A node's endpoint, not a network, is refused.
	ConflictEndpointNotAllowed: false,
	// One cluster listed twice: the spec's entries, not their networks.
	ConflictSameCluster: false,
	// Reachability and the relay, not networks: the Ready condition names the pair.
	ConflictNoRelay: false,
}

// Why a pair of clusters is relayed (a path's reason; a pair with no path
// has ConflictNoRelay).
const PathReasonBothBehindNAT = "BothBehindNAT"

// Why a member cluster cannot relay (a relay refusal's reason).
const (
	RelayRefusedBehindNAT       = "BehindNAT"
	RelayRefusedUnreachable     = "ClusterUnreachable"
	RelayRefusedNoDialableGroup = "NoDialableGroup"
	RelayRefusedCannotCarry     = "CannotCarry"
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
	WarningCredentialExpiring      = "CredentialExpiring"
	WarningCredentialExpired       = "CredentialExpired"
	WarningNodesTooLarge           = "NodesTooLarge"
	WarningInvalidNodes            = "InvalidNodes"
	// Another mesh with multi-cluster services has verified the cluster too.
	WarningServicesClusterShared = "ServicesClusterShared"
)

// Reasons a managed Peer is kept as it is.
const (
	KeptSourceUnreachable = "SourceUnreachable"
	KeptNoReadyGroups     = "SourceHasNoReadyGroups"
)

// Host access reasons: why a mesh may or may not reach into the local
// cluster. They are computed beside the grants (pkg/plancache), shown in
// the plan's hostAccess and repeated by the Granted condition.
const (
	HostReasonNoLocalCluster     = "NoLocalCluster"
	HostReasonPeerRights         = "PeerRights"
	HostReasonGranted            = "Granted"
	HostReasonNetworksNotGranted = "NetworksNotGranted"
	HostReasonNoGrant            = "NoGrant"
	HostReasonUpgradeGracePeriod = "UpgradeGracePeriod"
	HostReasonGracePeriodExpired = "GracePeriodExpired"
)
