package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Granularity says how a member cluster's nodes are grouped behind WireGuard
// leaders, as Kilo's --mesh-granularity does.
// +enum
type Granularity string

const (
	// GranularityAuto detects the granularity from the nodes' kilo.squat.ai/granularity annotation.
	GranularityAuto Granularity = "Auto"
	// GranularityLocation groups nodes by location; only each location's leader runs WireGuard.
	GranularityLocation Granularity = "Location"
	// GranularityFull (upstream Kilo) makes every node its own group, tunnelling to every other node, in its location or not; other clusters get one Peer per node.
	GranularityFull Granularity = "Full"
	// GranularityCross (a widely deployed Kilo patch) tunnels only between locations: nodes of one location reach each other directly, while each node is its own group towards other locations; other clusters get one Peer per node, as with Full.
	GranularityCross Granularity = "Cross"
)

const (
	// DefaultWireguardPort is Kilo's default WireGuard listen port.
	DefaultWireguardPort int32 = 51820
	// DefaultTopologyLabel is the node label Kilo reads the location from.
	DefaultTopologyLabel = "topology.kubernetes.io/region"
	// DefaultKubeconfigKey is the Secret key that holds a member cluster's kubeconfig.
	DefaultKubeconfigKey = "kubeconfig"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterMesh joins several Kubernetes clusters that run Kilo into one
// WireGuard mesh by keeping Kilo Peers on every member cluster.
type ClusterMesh struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec lists the member clusters and the networks each one owns.
	Spec ClusterMeshSpec `json:"spec"`
	// status is what the server last observed and applied.
	// +optional
	Status ClusterMeshStatus `json:"status,omitempty"`
}

// MultiClusterServices says whether a mesh also carries Services between its
// clusters, as the Multi-Cluster Services API (KEP-1645) describes.
// +enum
type MultiClusterServices string

const (
	// MultiClusterServicesEnabled makes the mesh one ClusterSet: a ServiceExport in any member
	// cluster gives a ServiceImport in every member cluster where its namespace exists.
	MultiClusterServicesEnabled MultiClusterServices = "Enabled"
	// MultiClusterServicesDisabled leaves ServiceExports and ServiceImports alone.
	MultiClusterServicesDisabled MultiClusterServices = "Disabled"
)

// ClusterMeshSpec is the desired shape of a mesh.
type ClusterMeshSpec struct {
	// clusters are the members of the mesh: at least two, at most one of them
	// local. A mesh with a local cluster reaches into the cluster this server
	// runs in, which needs the right to manage its Kilo Peers or a
	// ClusterMeshGrant covering the mesh's namespace.
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterEntry `json:"clusters"`
	// multiClusterServices, when Enabled, makes the mesh one ClusterSet of the
	// Multi-Cluster Services API (multicluster.x-k8s.io, KEP-1645): for every
	// ServiceExport in a member cluster, each member cluster where the
	// namespace exists gets a ServiceImport, and for a ClusterSetIP import a
	// derived Service with EndpointSlices of the exporting clusters' ready
	// endpoints inside their podCIDRs. A cluster belongs to at most one mesh
	// with services Enabled. Disabled (the default) leaves them alone.
	// +optional
	// +default="Disabled"
	MultiClusterServices MultiClusterServices `json:"multiClusterServices,omitempty"`
	// relayCluster names the member cluster through which two clusters
	// behind NAT (behindNAT) reach each other: their packets are decrypted
	// and encrypted again on its WireGuard leader, one hop, and it must not
	// be behind NAT itself. Empty: when two clusters behind NAT need one,
	// the first cluster by name that can relay every such pair is chosen,
	// and the plan says which and why. Pairs where one side can be dialled
	// always go direct.
	// +optional
	RelayCluster string `json:"relayCluster,omitempty"`
}

// ClusterEntry describes one member cluster and the networks it owns. Only
// addresses inside these networks are ever advertised for it.
type ClusterEntry struct {
	// name identifies the cluster within the mesh (a DNS-1123 label).
	Name string `json:"name"`
	// local marks the cluster this server runs in; it is reached with the
	// server's own credentials. At most one cluster is local.
	// +optional
	Local bool `json:"local,omitempty"`
	// kubeconfigSecretRef names a Secret in the mesh's namespace holding a
	// self-contained kubeconfig for this cluster. Required unless local.
	// +optional
	KubeconfigSecretRef *SecretKeyReference `json:"kubeconfigSecretRef,omitempty"`
	// podCIDRs are the cluster's pod networks; every node's pod CIDR must lie inside one.
	// +listType=atomic
	PodCIDRs []string `json:"podCIDRs"`
	// wireguardCIDR is the cluster's Kilo --subnet; leaders' WireGuard IPs come from it.
	WireguardCIDR string `json:"wireguardCIDR"`
	// wireguardPort is the UDP port of Kilo on the cluster's nodes, used when an
	// endpoint is built from a node's ExternalIP. Defaults to 51820.
	// +optional
	// +default=51820
	WireguardPort int32 `json:"wireguardPort,omitempty"`
	// serviceCIDR is the cluster's service network, advertised through exactly one of its Peers.
	// +optional
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// additionalCIDRs are further networks of the cluster, advertised like serviceCIDR.
	// +optional
	// +listType=atomic
	AdditionalCIDRs []string `json:"additionalCIDRs,omitempty"`
	// nodeCIDRs are the nodes' host networks. When set, only internal IPs inside
	// them are advertised; when empty, internal IPs are not advertised.
	// +optional
	// +listType=atomic
	NodeCIDRs []string `json:"nodeCIDRs,omitempty"`
	// persistentKeepalive, in seconds, is set on the Peers that represent this
	// cluster elsewhere; use it when the cluster is behind NAT. 0 takes the
	// leader's kilo.squat.ai/persistent-keepalive annotation instead.
	// +optional
	PersistentKeepalive int32 `json:"persistentKeepalive,omitempty"`
	// behindNAT says that no other cluster can dial this cluster's nodes
	// (NAT, a private network, outbound connections only). The Peers
	// representing it elsewhere carry no endpoint and a keepalive
	// (persistentKeepalive, else its leaders' annotation, else 25 s), its
	// nodes need kilo.squat.ai/persistent-keepalive to open the tunnels, and
	// it reaches another cluster behind NAT only through the mesh's relay
	// cluster (relayCluster).
	// +optional
	BehindNAT bool `json:"behindNAT,omitempty"`
	// granularity is the cluster's Kilo mesh granularity; Auto detects it from the nodes.
	// +optional
	// +default="Auto"
	Granularity Granularity `json:"granularity,omitempty"`
	// topologyLabel is the node label that names a node's location when it has
	// no kilo.squat.ai/location annotation. Defaults to topology.kubernetes.io/region.
	// +optional
	// +default="topology.kubernetes.io/region"
	TopologyLabel string `json:"topologyLabel,omitempty"`
}

// SecretKeyReference points at one key of a Secret in the mesh's namespace.
type SecretKeyReference struct {
	// name of the Secret.
	Name string `json:"name"`
	// key within the Secret's data. Defaults to "kubeconfig".
	// +optional
	// +default="kubeconfig"
	Key string `json:"key,omitempty"`
}

// Condition types of a ClusterMesh.
const (
	// ConditionReady is True when every member is reachable, every desired
	// Peer is applied, and no conflict or invalid network keeps the mesh
	// from carrying anything between two of its clusters.
	ConditionReady = "Ready"
	// ConditionClustersReachable is True when every member cluster answers.
	ConditionClustersReachable = "ClustersReachable"
	// ConditionPeersApplied is True when every desired Peer exists as planned.
	ConditionPeersApplied = "PeersApplied"
	// ConditionPeersCarried is False when conflicts keep groups or Peers
	// out of the mesh; the message says which, how many and why.
	ConditionPeersCarried = "PeersCarried"
	// ConditionNetworksValid is False when networks conflict with each other or with other meshes.
	ConditionNetworksValid = "NetworksValid"
	// ConditionCredentialsValid is False when the credential of a member
	// cluster's kubeconfig expires within 30 days or has expired.
	ConditionCredentialsValid = "CredentialsValid"
	// ConditionGranted says whether, and on what basis, the mesh may reach
	// into the local cluster; False says what is withheld and why.
	ConditionGranted = "Granted"
	// ConditionDeparturesComplete is False while a cluster that left the
	// mesh still holds its Peers, or others hold the departed cluster's;
	// the reason says whether the work is under way or stuck.
	ConditionDeparturesComplete = "DeparturesComplete"
	// ConditionServicesExclusive is False while another mesh with
	// multiClusterServices Enabled has verified a member cluster of this
	// one, which also has them Enabled: a cluster belongs to at most one
	// ClusterSet. The message names this mesh's entries only.
	ConditionServicesExclusive = "ServicesExclusive"
)

// Reasons of a status.departedClusters item, and of a False
// DeparturesComplete condition. Every reason but DepartureRemoving means the
// server gave up and the message names the manual step.
const (
	// DepartureRemoving: the server is removing what the mesh wrote.
	DepartureRemoving = "Removing"
	// DepartureCredentialGone: the server holds no connection to the
	// departed cluster (its credential was removed, or the server restarted).
	DepartureCredentialGone = "CredentialGone"
	// DepartureRefused: the departed cluster refused the deletes.
	DepartureRefused = "Refused"
	// DepartureUnreachable: the departed cluster did not answer within the
	// server's timeout.
	DepartureUnreachable = "Unreachable"
)

// ConditionTypes are the conditions the server reports on every
// ClusterMesh, in the order clients show them.
var ConditionTypes = []string{
	ConditionReady, ConditionClustersReachable, ConditionPeersApplied,
	ConditionPeersCarried, ConditionNetworksValid, ConditionCredentialsValid, ConditionGranted,
	ConditionDeparturesComplete, ConditionServicesExclusive,
}

// ClusterMeshStatus is what the server last observed and applied.
type ClusterMeshStatus struct {
	// observedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready, ClustersReachable, PeersApplied, PeersCarried, NetworksValid, CredentialsValid, Granted, DeparturesComplete, ServicesExclusive.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// clusters holds per-cluster figures.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterStatus `json:"clusters,omitempty"`
	// departedClusters are the clusters that left the mesh (their entry was
	// removed, or its Secret now reaches another cluster) while the Peers
	// the mesh wrote on them, or the Peers of them on the others, remain.
	// An item goes once both are gone.
	// +optional
	// +listType=map
	// +listMapKey=name
	DepartedClusters []DepartedCluster `json:"departedClusters,omitempty"`
}

// DepartedCluster is a cluster that left the mesh and still holds, or is
// still held in, some of its Peers.
type DepartedCluster struct {
	// name is the spec.clusters[].name the cluster had.
	Name string `json:"name"`
	// server is the API server URL the entry pointed at.
	// +optional
	Server string `json:"server,omitempty"`
	// reason is Removing while the server works, else why it gave up:
	// CredentialGone, Refused or Unreachable.
	Reason string `json:"reason"`
	// message says what is left and, when the server gave up, how to remove it by hand.
	// +optional
	Message string `json:"message,omitempty"`
	// lastTransitionTime is when the reason last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
}

// ClusterStatus holds the observed figures of one member cluster.
type ClusterStatus struct {
	// name matches a spec.clusters[].name.
	Name string `json:"name"`
	// reachable is whether the cluster's API server answered.
	Reachable bool `json:"reachable"`
	// lastError is the most recent error talking to the cluster, without secret content.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// granularity is the granularity in effect: the spec's, or the one detected from the nodes.
	// +optional
	Granularity Granularity `json:"granularity,omitempty"`
	// nodes is the number of nodes of the cluster.
	Nodes int32 `json:"nodes"`
	// readyNodes is the number of nodes Kilo counts as Ready.
	ReadyNodes int32 `json:"readyNodes"`
	// locations is the number of WireGuard groups (locations, or nodes under full/cross).
	Locations int32 `json:"locations"`
	// peersDesired is the number of Peers this cluster should hold.
	PeersDesired int32 `json:"peersDesired"`
	// peersApplied is the number of those Peers that exist on the cluster as planned.
	PeersApplied int32 `json:"peersApplied"`
	// skippedNodes is the number of nodes left out of the mesh.
	SkippedNodes int32 `json:"skippedNodes"`
	// skippedByReason counts the skipped nodes by reason.
	// +optional
	// +listType=map
	// +listMapKey=reason
	SkippedByReason []ReasonCount `json:"skippedByReason,omitempty"`
}

// ReasonCount is the number of nodes skipped for one reason.
type ReasonCount struct {
	// reason is a stable CamelCase identifier, e.g. NotReady or NoPublicKey.
	Reason string `json:"reason"`
	// count is the number of nodes skipped for it.
	Count int32 `json:"count"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterMeshList is a list of ClusterMeshes.
type ClusterMeshList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterMesh `json:"items"`
}
