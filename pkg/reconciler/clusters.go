package reconciler

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
)

// Clusters is what the reconciler uses of the member-cluster manager: one
// handle (clusters.Member) per connection, with its caches and what may be
// done through it, for a mesh's entries (Members), for the connections
// held past their use (Held, Release, for as long as KeepFor says) and for
// every connection (Connections). Their changes reach the reconciler
// through the Planner, like every other input of a plan (a deleted mesh's
// too).
type Clusters interface {
	// Settled: every entry's caches synced, or it is known to be unusable.
	Settled(mesh *meshv1alpha1.ClusterMesh) bool
	Members(mesh *meshv1alpha1.ClusterMesh) map[string]clusters.Member
	Held(mesh types.NamespacedName) []clusters.Member
	Release(key clusters.HoldKey)
	KeepFor(d time.Duration)
	Connections() []clusters.Member
	// IgnoreOwnWrites keeps the echoes of the reconciler's own writes from
	// the change handlers.
	IgnoreOwnWrites(f clusters.OwnWrites)
}

var _ Clusters = (*clusters.Manager)(nil)

// usable reports whether a member cluster's cache can be acted on: it
// answers, and its cache holds a complete list.
func usable(st clusters.ClusterState, ok bool) bool {
	return ok && st.Reachable && st.Synced
}
