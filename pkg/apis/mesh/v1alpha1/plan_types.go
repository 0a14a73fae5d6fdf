package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GranularitySource says where a cluster's granularity in a plan came from.
// +enum
type GranularitySource string

const (
	// GranularitySourceSpec means the mesh spec set the granularity.
	GranularitySourceSpec GranularitySource = "Spec"
	// GranularitySourceNodes means it was detected from the nodes' kilo.squat.ai/granularity annotations.
	GranularitySourceNodes GranularitySource = "NodeAnnotations"
	// GranularitySourceDefault means no node carried the annotation, so Kilo's default (Location) applies.
	GranularitySourceDefault GranularitySource = "Default"
)

// NodeRole is a node's role in its Kilo group.
// +enum
type NodeRole string

const (
	// NodeRoleLeader is the one node of a group that runs WireGuard; remote Peers point at it.
	NodeRoleLeader NodeRole = "Leader"
	// NodeRoleMember is a node that routes through its group's leader.
	NodeRoleMember NodeRole = "Member"
)

// DiffState says whether a target cluster's changes could be computed.
// +enum
type DiffState string

const (
	// DiffStateComputed means the target answered and its Peers were compared with the plan.
	DiffStateComputed DiffState = "Computed"
	// DiffStateUnknown means the target is unreachable, so nothing is known about its Peers.
	DiffStateUnknown DiffState = "Unknown"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterMeshPlan is what the server would do for a ClusterMesh right now:
// how every node of every member cluster is grouped and whether it is
// advertised, which Kilo Peers every member cluster must hold, how that
// differs from the Peers it holds, and what conflicts stand in the way. The
// reconciler applies exactly this plan, so the preview is the real thing.
type ClusterMeshPlan struct {
	metav1.TypeMeta `json:",inline"`
	// metadata carries the name and namespace of the ClusterMesh it plans.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// generatedAt is the time the plan was computed for; node readiness
	// (kilo.squat.ai/last-seen) is judged against it.
	GeneratedAt metav1.Time `json:"generatedAt"`
	// hostAccess says what the mesh may do on the local cluster, on what
	// basis, and what is withheld.
	// +optional
	HostAccess *HostAccessPlan `json:"hostAccess,omitempty"`
	// clusters holds, for every member cluster, what was observed and decided
	// about its nodes and groups, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterPlan `json:"clusters,omitempty"`
	// targets holds, for every member cluster, how its Peers must change,
	// sorted by cluster name.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Targets []TargetPlan `json:"targets,omitempty"`
	// relay says which cluster relays between the clusters behind NAT, on
	// what basis and why the others cannot; absent when fewer than two
	// clusters are behind NAT and the spec names no relayCluster.
	// +optional
	Relay *RelayPlan `json:"relay,omitempty"`
	// paths are the pairs of member clusters that do not reach each other
	// directly, sorted: relayed pairs and pairs with no path. Every pair not
	// listed goes direct, since one of its two clusters can be dialled.
	// +optional
	// +listType=atomic
	Paths []PathPlan `json:"paths,omitempty"`
	// conflicts are problems that keep addresses or Peers out of the mesh
	// (a CIDR claimed twice, a public key or Peer name held by a Peer this mesh
	// does not manage, overlapping networks).
	// +optional
	// +listType=atomic
	Conflicts []PlanIssue `json:"conflicts,omitempty"`
	// warnings are problems that do not change the plan but may break traffic
	// (a NATed cluster that sends no keepalives, a private endpoint, a
	// WireGuard IP that disagrees with Kilo's annotation).
	// +optional
	// +listType=atomic
	Warnings []PlanIssue `json:"warnings,omitempty"`
}

// ClusterPlan is what was observed and decided for one member cluster as a
// source of Peers.
type ClusterPlan struct {
	// name matches a spec.clusters[].name.
	Name string `json:"name"`
	// reachable is whether a snapshot of the cluster's nodes was available.
	Reachable bool `json:"reachable"`
	// behindNAT repeats spec.clusters[].behindNAT: no other cluster can dial
	// it, so its Peers elsewhere are roaming and it reaches another cluster
	// behind NAT only through the relay (see paths).
	// +optional
	BehindNAT bool `json:"behindNAT,omitempty"`
	// error is why the cluster could not be read, without secret content.
	// +optional
	Error string `json:"error,omitempty"`
	// granularity is the granularity in effect: the spec's, or the one
	// detected from the nodes. Empty when the cluster is unreachable.
	// +optional
	Granularity Granularity `json:"granularity,omitempty"`
	// granularitySource says where granularity came from: Spec, NodeAnnotations or Default.
	// +optional
	GranularitySource GranularitySource `json:"granularitySource,omitempty"`
	// summary counts the cluster's nodes and groups.
	Summary ClusterPlanSummary `json:"summary"`
	// extraNetworksGroup is the group whose Peer carries the cluster's
	// serviceCIDR and additionalCIDRs; empty when no group can carry them.
	// +optional
	ExtraNetworksGroup string `json:"extraNetworksGroup,omitempty"`
	// groups are the cluster's Kilo groups (locations, or nodes under
	// full/cross granularity) formed by its Kilo-Ready nodes, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Groups []GroupPlan `json:"groups,omitempty"`
	// nodes holds the decision for every node of the cluster, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=node
	Nodes []NodeDecision `json:"nodes,omitempty"`
}

// ClusterPlanSummary counts a cluster's nodes and groups.
type ClusterPlanSummary struct {
	// nodes is the number of nodes in the snapshot.
	Nodes int32 `json:"nodes"`
	// kiloReadyNodes is the number of nodes Kilo itself counts as Ready.
	KiloReadyNodes int32 `json:"kiloReadyNodes"`
	// advertisedNodes is the number of nodes whose pod CIDRs are advertised to other clusters.
	AdvertisedNodes int32 `json:"advertisedNodes"`
	// groups is the number of Kilo groups.
	Groups int32 `json:"groups"`
	// readyGroups is the number of groups exported as a Peer.
	ReadyGroups int32 `json:"readyGroups"`
	// skippedByReason counts the nodes that are not advertised, by reason.
	// +optional
	// +listType=map
	// +listMapKey=reason
	SkippedByReason []ReasonCount `json:"skippedByReason,omitempty"`
}

// GroupPlan is one Kilo group of a cluster: the nodes that share one
// WireGuard leader and are imported elsewhere as one Peer.
type GroupPlan struct {
	// name is Kilo's name for the group: location:<name> or node:<name>.
	Name string `json:"name"`
	// leader is the node Kilo elects to run WireGuard for the group.
	Leader string `json:"leader"`
	// members are the group's Kilo-Ready nodes, sorted by name, leader included.
	// +listType=atomic
	Members []string `json:"members"`
	// wireguardIP is the address Kilo gives the leader's WireGuard interface,
	// computed from the cluster's wireguardCIDR and the group order.
	// +optional
	WireguardIP string `json:"wireguardIP,omitempty"`
	// ready is true when the group is exported as a Peer to the other clusters.
	Ready bool `json:"ready"`
	// reason is a stable CamelCase identifier of why the group is not ready.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message explains reason to a human.
	// +optional
	Message string `json:"message,omitempty"`
	// peerName is the name of the Peer that represents the group on the other clusters.
	// +optional
	PeerName string `json:"peerName,omitempty"`
	// endpoint is what the other clusters dial (host:port); empty for a roaming group.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// persistentKeepalive is the keepalive, in seconds, set on the group's Peer.
	// +optional
	PersistentKeepalive int32 `json:"persistentKeepalive,omitempty"`
}

// NodeDecision says whether one node's addresses are advertised and why.
type NodeDecision struct {
	// node is the node's name.
	Node string `json:"node"`
	// included is true when the node's pod CIDRs are advertised to the other clusters.
	Included bool `json:"included"`
	// group is the Kilo group of the node; empty when Kilo itself does not count the node.
	// +optional
	Group string `json:"group,omitempty"`
	// role is Leader or Member within group. A skipped node can still lead
	// its group in Kilo; its group's Peer then uses its key and endpoint.
	// +optional
	Role NodeRole `json:"role,omitempty"`
	// reason is a stable CamelCase identifier: Advertised for an included
	// node, else why it is skipped (NotReady, NoPublicKey, NoPodCIDR,
	// PodCIDROutsideDeclared, MalformedEndpoint, NoEndpointNoKeepalive, ...).
	Reason string `json:"reason"`
	// message explains reason to a human.
	// +optional
	Message string `json:"message,omitempty"`
	// notes report what was left out or ignored without skipping the node,
	// such as an internal IP outside nodeCIDRs or a malformed annotation.
	// +optional
	// +listType=atomic
	Notes []PlanNote `json:"notes,omitempty"`
}

// PlanNote is one remark about a node.
type PlanNote struct {
	// reason is a stable CamelCase identifier.
	Reason string `json:"reason"`
	// message explains reason to a human.
	Message string `json:"message"`
}

// TargetPlan is how the Peers of one member cluster must change.
type TargetPlan struct {
	// cluster matches a spec.clusters[].name.
	Cluster string `json:"cluster"`
	// diffState is Computed, or Unknown when the cluster is unreachable;
	// the lists below are empty when Unknown.
	DiffState DiffState `json:"diffState"`
	// desiredPeers is the number of Peers the cluster must hold.
	DesiredPeers int32 `json:"desiredPeers"`
	// create lists the Peers to create, by name.
	// +optional
	// +listType=atomic
	Create []string `json:"create,omitempty"`
	// update lists the Peers whose managed fields differ from the plan.
	// +optional
	// +listType=map
	// +listMapKey=name
	Update []PeerUpdate `json:"update,omitempty"`
	// delete lists the Peers this mesh manages on the cluster that the plan no longer holds.
	// +optional
	// +listType=atomic
	Delete []string `json:"delete,omitempty"`
	// unchanged lists the Peers that already match the plan.
	// +optional
	// +listType=atomic
	Unchanged []string `json:"unchanged,omitempty"`
	// kept lists Peers left exactly as they are, neither updated nor deleted,
	// because what they represent cannot be observed or is in conflict.
	// +optional
	// +listType=map
	// +listMapKey=name
	Kept []KeptPeer `json:"kept,omitempty"`
}

// PeerUpdate names a Peer to update and the fields that change.
type PeerUpdate struct {
	// name of the Peer.
	Name string `json:"name"`
	// fields are the changed field paths, e.g. spec.allowedIPs or spec.endpoint.
	// +listType=atomic
	Fields []string `json:"fields"`
}

// KeptPeer is a managed Peer left as it is.
type KeptPeer struct {
	// name of the Peer.
	Name string `json:"name"`
	// sourceCluster is the cluster the Peer represents.
	SourceCluster string `json:"sourceCluster"`
	// reason is a stable CamelCase identifier, e.g. SourceUnreachable.
	Reason string `json:"reason"`
}

// PlanIssue is one conflict or warning of a plan.
type PlanIssue struct {
	// reason is a stable CamelCase identifier, e.g. CIDRClaimedTwice.
	Reason string `json:"reason"`
	// cluster is the member cluster the issue is about, if any.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// target is the member cluster whose Peers are affected, if only one is.
	// +optional
	Target string `json:"target,omitempty"`
	// message explains the issue to a human.
	Message string `json:"message"`
}

// HostAccessBasis is what a mesh's access to the local cluster rests on.
// +enum
type HostAccessBasis string

const (
	// HostAccessBasisNoLocalCluster: the mesh has no local cluster and asks for nothing there.
	HostAccessBasisNoLocalCluster HostAccessBasis = "NoLocalCluster"
	// HostAccessBasisPeerRights: the mesh was last written by a user who may
	// manage peers.kilo.squat.ai on the local cluster; nothing is withheld.
	HostAccessBasisPeerRights HostAccessBasis = "PeerRights"
	// HostAccessBasisGrant: ClusterMeshGrants covering the mesh's namespace
	// bound what crosses into and out of the local cluster.
	HostAccessBasisGrant HostAccessBasis = "Grant"
	// HostAccessBasisUpgradeGracePeriod: the mesh was stored before grants
	// existed and no grant covers it; it keeps its access until
	// gracePeriodEnds.
	HostAccessBasisUpgradeGracePeriod HostAccessBasis = "UpgradeGracePeriod"
	// HostAccessBasisNone: the mesh may not reach into the local cluster.
	HostAccessBasisNone HostAccessBasis = "None"
)

// HostAccessPlan is what a mesh may do on the local cluster (the one this
// server runs in) and why. The Granted condition of the mesh repeats it.
type HostAccessPlan struct {
	// granted is true when nothing the mesh declares is withheld from or
	// about the local cluster.
	Granted bool `json:"granted"`
	// basis is what the access rests on: NoLocalCluster, PeerRights, Grant,
	// UpgradeGracePeriod or None.
	Basis HostAccessBasis `json:"basis"`
	// reason is a stable CamelCase identifier, the Granted condition's reason.
	Reason string `json:"reason"`
	// message explains reason to a human.
	Message string `json:"message"`
	// grants are the ClusterMeshGrants covering the mesh's namespace.
	// +optional
	// +listType=atomic
	Grants []string `json:"grants,omitempty"`
	// memberNetworks are the networks members may advertise into the local
	// cluster when basis is Grant.
	// +optional
	// +listType=atomic
	MemberNetworks []string `json:"memberNetworks,omitempty"`
	// localNetworks are the networks of the local cluster that may be
	// advertised to members when basis is Grant.
	// +optional
	// +listType=atomic
	LocalNetworks []string `json:"localNetworks,omitempty"`
	// maxPeers and maxPeerKiB bound the mesh's Peers on the local cluster
	// when basis is Grant (the grants' maxHostPeers and maxHostPeerKiB).
	// +optional
	MaxPeers int32 `json:"maxPeers,omitempty"`
	// +optional
	MaxPeerKiB int32 `json:"maxPeerKiB,omitempty"`
	// gracePeriodEnds is when a mesh stored before grants existed, and
	// covered by none, loses its Peers on the local cluster.
	// +optional
	GracePeriodEnds *metav1.Time `json:"gracePeriodEnds,omitempty"`
}
