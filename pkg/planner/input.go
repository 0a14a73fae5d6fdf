package planner

import (
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Input is everything a plan depends on. The planner reads it and never
// modifies it, so informer caches can be passed as they are.
type Input struct {
	// MeshNamespace, MeshName and MeshUID identify the ClusterMesh; they go
	// into every Peer's name and labels.
	MeshNamespace string
	MeshName      string
	MeshUID       types.UID
	// Installation identifies the installation of the server planning
	// (one storage of meshes, every replica alike): every Peer carries it
	// as LabelInstallation. Empty: the Peers carry no such label.
	Installation string
	// Spec is the mesh's spec, defaulted or not.
	Spec meshv1alpha1.ClusterMeshSpec
	// Clusters holds a snapshot per member cluster, keyed by the
	// spec.clusters[].name. A member without a snapshot is unreachable.
	Clusters map[string]ClusterSnapshot
	// Now is the time node readiness is judged against.
	Now time.Time
	// HostAccess is what the mesh may do on its local cluster; required
	// when the spec has one.
	HostAccess HostAccess
	// OtherMeshClaims are the networks that other meshes, which take
	// precedence over this one, claim on member clusters this mesh shares
	// with them, by the name of this mesh's cluster. No Peer this mesh puts
	// on that cluster carries an address overlapping one of them
	// (ConflictCIDRClaimedByOtherMesh). Computed outside the planner, from
	// verified cluster identities (pkg/plancache).
	OtherMeshClaims map[string][]OtherMeshClaim
	// OtherServicesMeshes are this mesh's clusters, by name, that another
	// mesh with multiClusterServices Enabled (of any namespace) has
	// verified too: the plan warns of them when this mesh has services
	// Enabled (ServicesClusterShared). Computed outside the planner, from
	// verified cluster identities (pkg/plancache).
	OtherServicesMeshes map[string]OtherServicesMesh
}

// OtherMeshClaim is one network another mesh claims on a shared cluster.
type OtherMeshClaim struct {
	Prefix netip.Prefix
	// SameCluster names the cluster of this mesh that the claim is a
	// network of, when both meshes list that cluster: its networks are its
	// own in both meshes, so the Peers representing it are not checked
	// against the claim. Empty when this mesh does not list it.
	SameCluster string
}

// ClusterSnapshot is what was read from one member cluster.
type ClusterSnapshot struct {
	// Reachable is false when the cluster could not be read; Nodes and Peers
	// are then ignored, and no Peer representing the cluster is deleted.
	Reachable bool
	// Error is why the cluster could not be read. It is shown in the plan,
	// so it must not carry secrets.
	Error string
	// Nodes are all the cluster's Nodes, in a list that the next snapshot
	// shares except where Nodes changed (chunklist.Sorted makes one).
	Nodes List[*corev1.Node]
	// Peers are all the Kilo Peers on the cluster now, managed or not.
	Peers PeerList
	// CredentialExpiry is when the credential the cluster is reached with
	// expires, as the credential itself states; zero when it states none.
	// Known whether or not the cluster is reachable: an expired credential
	// is one reason a cluster stops answering.
	CredentialExpiry time.Time
	// Identity is the cluster's verified identity, "" while unknown: two
	// entries with one identity are one cluster listed twice.
	Identity string
	// Connection names what the snapshot was read through (it changes with
	// the content of the entry's Secret): a plan holds only for it.
	Connection string
}
