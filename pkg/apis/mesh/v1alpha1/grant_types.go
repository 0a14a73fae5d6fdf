package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationHostAccess records, on a ClusterMesh, why the mesh may reach into
// the local (host) cluster. Admission sets it on create and on every spec
// update, from the requester's rights at that moment, and overwrites
// whatever a client sent; metadata-only writes keep the stored value. The
// reconciler acts long after the requester is gone, so this record is what
// it trusts. A mesh without it was stored before grants existed.
const AnnotationHostAccess = "mesh.kilo.squat.ai/host-access"

// AnnotationServicesAuthor records, on a ClusterMesh with a local cluster
// and multiClusterServices Enabled, who last wrote its spec (user name,
// UID, groups, extra, as JSON). Admission sets it like AnnotationHostAccess
// and overwrites whatever a client sent; the server asks
// SubjectAccessReviews for this user before it exports from or imports
// into a namespace of the host that no ClusterMeshGrant names.
const AnnotationServicesAuthor = "mesh.kilo.squat.ai/services-author"

// Values of AnnotationHostAccess.
const (
	// HostAccessPeerRights: the requester may create, update and delete
	// peers.kilo.squat.ai on the host cluster, so the mesh does nothing the
	// requester could not do by hand; its networks are bounded only by
	// --allowed-cidrs.
	HostAccessPeerRights = "peer-rights"
	// HostAccessGrant: the mesh reaches into the host only as far as the
	// ClusterMeshGrants covering its namespace allow, evaluated live.
	HostAccessGrant = "grant"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterMeshGrant lets the ClusterMeshes of some namespaces reach into the
// cluster this server runs in (the host): put Kilo Peers there for their
// member clusters' networks, and advertise the host's networks to their
// members. Without a grant, only users who may create, update and delete
// peers.kilo.squat.ai on the host can create meshes with a local cluster.
// A grant names other tenants' namespaces: only cluster administrators
// should read or write grants.
type ClusterMeshGrant struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which namespaces are covered and what their meshes may do.
	Spec ClusterMeshGrantSpec `json:"spec"`
}

// ClusterMeshGrantSpec says which namespaces a grant covers and what their
// meshes may route through the host. Several grants covering one namespace
// add up. Narrowing or deleting a grant takes effect at once: the Peers it
// no longer covers are removed from the host.
type ClusterMeshGrantSpec struct {
	// namespaces are covered by name.
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`
	// namespaceSelector covers the namespaces whose labels it matches; an
	// empty selector matches every namespace. A namespace matching either
	// namespaces or namespaceSelector is covered.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// memberNetworks are the networks (CIDRs) the member clusters of covered
	// meshes may advertise into the host: every network the mesh declares
	// for a cluster that is not local must lie inside one of them, and the
	// Peers on the host carry only addresses inside them.
	// +optional
	// +listType=atomic
	MemberNetworks []string `json:"memberNetworks,omitempty"`
	// localNetworks are the networks (CIDRs) of the host that covered meshes
	// may advertise to their members: every network the mesh declares for
	// its local cluster must lie inside one of them.
	// +optional
	// +listType=atomic
	LocalNetworks []string `json:"localNetworks,omitempty"`
	// memberServers are the networks (CIDRs) the API servers named by the
	// kubeconfigs of covered meshes may resolve to, in addition to the
	// server's --member-server-cidrs.
	// +optional
	// +listType=atomic
	MemberServers []string `json:"memberServers,omitempty"`
	// maxHostPeers is the most Peers one covered mesh may put on the host
	// (default 1000). Beyond it, Peers are left out in name order and the
	// plan says so (TooManyHostPeers). Of several covering grants the
	// largest value applies.
	// +optional
	MaxHostPeers *int32 `json:"maxHostPeers,omitempty"`
	// maxHostPeerKiB bounds what the Peers of one covered mesh on the host
	// weigh together, in KiB (default 8192): their names, labels,
	// annotations and specs, plus 512 bytes each for what the API and etcd
	// add. Of several covering grants the largest value applies.
	// +optional
	MaxHostPeerKiB *int32 `json:"maxHostPeerKiB,omitempty"`
	// serviceNamespaces are namespaces of the host that covered meshes with
	// multiClusterServices Enabled and a local cluster may export
	// ServiceExports from and write ServiceImports, derived Services and
	// EndpointSlices into, with the server's own identity. Any other host
	// namespace needs the mesh's author to hold those rights there.
	// +optional
	// +listType=set
	ServiceNamespaces []string `json:"serviceNamespaces,omitempty"`
}

// Defaults and bounds of the host Peer limits of a grant. A thousand Peers
// is a mesh of a thousand groups (nodes under full granularity); each
// Peer weighs about 1 KiB, so 8 MiB leaves room for groups with many pod
// networks and stays far below etcd's default quota of 2 GiB.
const (
	DefaultMaxHostPeers   = 1000
	DefaultMaxHostPeerKiB = 8192
	// MaxHostPeersLimit and MaxHostPeerKiBLimit are the largest values a
	// grant may set: 100,000 Peers, 1 GiB.
	MaxHostPeersLimit   = 100_000
	MaxHostPeerKiBLimit = 1 << 20
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterMeshGrantList is a list of ClusterMeshGrants.
type ClusterMeshGrantList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterMeshGrant `json:"items"`
}
