package v1alpha1

// RelayBasis says how a plan's relay cluster was decided.
// +enum
type RelayBasis string

const (
	// RelayBasisSpec: spec.relayCluster names it.
	RelayBasisSpec RelayBasis = "Spec"
	// RelayBasisChosen: the planner chose it, the first cluster by name
	// that can relay every pair of clusters behind NAT.
	RelayBasisChosen RelayBasis = "Chosen"
	// RelayBasisNone: no cluster can relay; the pairs behind NAT have no path.
	RelayBasisNone RelayBasis = "None"
)

// RelayPlan is the cluster through which the clusters behind NAT reach each
// other: the spoke clusters' Peer for one of its groups also carries the
// other spokes' networks, and its leader forwards between them.
type RelayPlan struct {
	// cluster is the relay cluster; empty when basis is None.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// basis is Spec, Chosen or None.
	Basis RelayBasis `json:"basis"`
	// group is the relay cluster's group whose leader forwards: the ready
	// group with an endpoint that ranks first for the cluster, so that it
	// moves only when that group stops being ready.
	// +optional
	Group string `json:"group,omitempty"`
	// peerName is the Peer of that group, which carries the relayed networks on the spokes.
	// +optional
	PeerName string `json:"peerName,omitempty"`
	// message says why this cluster relays, or why none can.
	Message string `json:"message"`
	// refused are the member clusters that cannot relay, and why.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Refused []RelayRefusal `json:"refused,omitempty"`
}

// RelayRefusal is why one member cluster cannot relay.
type RelayRefusal struct {
	// cluster is a spec.clusters[].name.
	Cluster string `json:"cluster"`
	// reason is a stable CamelCase identifier: BehindNAT, ClusterUnreachable,
	// NoDialableGroup or CannotCarry.
	Reason string `json:"reason"`
	// message explains reason to a human.
	Message string `json:"message"`
}

// PathKind says how two member clusters reach each other.
// +enum
type PathKind string

const (
	// PathDirect: each holds Peers of the other; at least one can be dialled.
	PathDirect PathKind = "Direct"
	// PathRelayed: both are behind NAT and reach each other through the relay cluster.
	PathRelayed PathKind = "Relayed"
	// PathNone: both are behind NAT and no cluster can relay between them.
	PathNone PathKind = "None"
)

// PathPlan is how one pair of member clusters reaches each other.
type PathPlan struct {
	// clusters are the two clusters, sorted by name.
	// +listType=atomic
	Clusters []string `json:"clusters"`
	// kind is Direct, Relayed or None.
	Kind PathKind `json:"kind"`
	// via is the relay cluster of a Relayed pair.
	// +optional
	Via string `json:"via,omitempty"`
	// reason is a stable CamelCase identifier: BothBehindNAT for a relayed
	// pair, NoRelay for a pair with no path.
	Reason string `json:"reason"`
	// message explains reason to a human.
	Message string `json:"message"`
}
