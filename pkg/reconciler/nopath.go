package reconciler

import (
	"fmt"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// noPathText names the pairs of clusters behind NAT that nothing relays
// between, and why, for the Ready condition.
func noPathText(plan *planner.Plan, pairs []planner.Uncarried) string {
	names := make([]string, 0, len(pairs))
	for _, p := range pairs {
		names = append(names, p.Source+" and "+p.Target)
	}
	why := ""
	if r := plan.View.Relay; r != nil {
		why = ": " + r.Message
	}
	return fmt.Sprintf("clusters behind NAT with no path between them (%s): %s%s; see the plan view's relay and paths",
		planner.ConflictNoRelay, summarize(names, 5), why)
}
