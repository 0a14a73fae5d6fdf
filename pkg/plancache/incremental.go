package plancache

import (
	"k8s.io/klog/v2"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// compute plans the entry's mesh from in. The entry keeps the planner's
// state of its last plan, so that a plan after a few node or Peer changes
// (or after MaxAge with none) patches the last one rather than planning
// the whole mesh again (planner.State.Next). The changes are found by
// comparing the member caches' objects with those of the last plan
// (planner.State.Diff), so nothing depends on which change a notification
// named, and whatever Diff cannot pin down is planned whole.
func (e *entry) compute(in planner.Input) (*planner.Plan, error) {
	var plan *planner.Plan
	var st *planner.State
	var err error
	whole := true
	if e.state != nil && e.uid == in.MeshUID {
		plan, st, whole, err = e.state.Next(in, e.state.Diff(&in))
	} else {
		plan, st, err = planner.Start(in)
	}
	e.state = st // Next consumed the last one, also on error
	if err != nil {
		return nil, err
	}
	klog.V(5).InfoS("Planned mesh", "mesh", klog.KRef(in.MeshNamespace, in.MeshName), "whole", whole)
	return plan, nil
}
