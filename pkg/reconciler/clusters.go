package reconciler

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
)

// Clusters is what the reconciler uses of the member-cluster manager: its
// caches (read) and its Peer clients (write); and, for the Peers of meshes
// and entries that are gone, its holds on their connections (Hold, Held,
// Release) and every connection it has. Their changes reach the
// reconciler through the Planner, like every other input of a plan (a
// deleted mesh's too).
type Clusters interface {
	Snapshot(mesh *meshv1alpha1.ClusterMesh) map[string]clusters.ClusterState
	PeerClient(mesh *meshv1alpha1.ClusterMesh, cluster string) (clusters.PeerClient, error)
	// ServicesClient writes multi-cluster services objects.
	ServicesClient(mesh *meshv1alpha1.ClusterMesh, cluster string) (*clusters.ServicesClient, error)
	Settled(mesh *meshv1alpha1.ClusterMesh) bool
	Identities(mesh *meshv1alpha1.ClusterMesh) map[string]string
	Hold(key clusters.HoldKey, mesh *meshv1alpha1.ClusterMesh, timeout time.Duration)
	Held(mesh types.NamespacedName) []clusters.Held
	HeldPeerClient(key clusters.HoldKey) (clusters.PeerClient, error)
	// HeldServicesClient writes services objects through a held
	// connection, and says whether it reaches the local cluster.
	HeldServicesClient(key clusters.HoldKey) (*clusters.ServicesClient, bool, error)
	// HeldPeers lists Peers of a held connection from its API server.
	HeldPeers(ctx context.Context, key clusters.HoldKey, selector string, limit int64) ([]*kilov1alpha1.Peer, error)
	Release(key clusters.HoldKey)
	Connections() []clusters.Connection
	// SetEchoFilter keeps the echoes of the reconciler's own writes from
	// the change handlers.
	SetEchoFilter(f clusters.EchoFilter)
	SetServicesEchoFilter(f clusters.ServicesEchoFilter)
}

var _ Clusters = (*clusters.Manager)(nil)

// usable reports whether a member cluster's cache can be acted on: it
// answers, and its cache holds a complete list.
func usable(st clusters.ClusterState, ok bool) bool {
	return ok && st.Reachable && st.Synced
}
