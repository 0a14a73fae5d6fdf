package reconciler

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// measured is a plan and the members read after it, of the same
// connections.
type measured struct {
	// plan is nil when planning failed with err; members are then nil.
	plan    *planner.Plan
	err     error
	members map[string]clusters.Member
	// states are the members' states, what the plan's other readers take.
	states map[string]clusters.ClusterState
}

// planMeasured plans mesh and reads its member caches so that both are of
// the connections its entries resolve to now: a plan made before an
// entry's Secret reached another cluster has the old cluster's diffs and
// figures, and is made again. It reports false when the connections kept
// moving; the mesh is looked at again then.
func (r *Reconciler) planMeasured(mesh *meshv1alpha1.ClusterMesh) (measured, bool) {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	for range 2 {
		plan, err := r.planner.Plan(mesh)
		if plan == nil {
			return measured{err: err}, true
		}
		members := r.clusters.Members(mesh)
		states := make(map[string]clusters.ClusterState, len(members))
		for name, mb := range members {
			states[name] = mb.State
		}
		stale := measuredElsewhere(plan, states)
		if len(stale) == 0 {
			return measured{plan: plan, err: err, members: members, states: states}, true
		}
		klog.V(2).InfoS("The plan was made on other connections than the entries reach now; planning again", "mesh", key, "clusters", stale)
		r.planner.Invalidate(key)
	}
	return measured{}, false
}

// measuredElsewhere names, sorted, the clusters whose plan was made on
// another connection than the one their state was read through.
func measuredElsewhere(plan *planner.Plan, states map[string]clusters.ClusterState) []string {
	var out []string
	for name, st := range states {
		if plan.Measured[name] != st.Connection {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
