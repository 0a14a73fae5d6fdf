package reconciler

import (
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plancache"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// expiryMargin lets the clock pass the second in which a node expires, as
// last-seen has a resolution of one second.
const expiryMargin = 100 * time.Millisecond

// untilCheckInExpiry is how long until the first node that Kilo counts
// stops counting for lack of a check-in. A node going silent causes no
// event, only time passing, so the mesh is looked at again then. The plan
// says when (planner.Plan.CheckInExpiry): reading every node's last-seen
// on every pass cost a pass more than planning a change did at 100
// clusters. Its moment is never later than the node's; once it has
// passed, the mesh is looked at again once the plan cache plans anew,
// reading the check-ins since. Zero means no node will expire.
func untilCheckInExpiry(plan *planner.Plan, now time.Time) time.Duration {
	if plan == nil || plan.CheckInExpiry.IsZero() {
		return 0
	}
	if d := plan.CheckInExpiry.Sub(now); d > 0 {
		return d + expiryMargin
	}
	return plancache.MaxAge
}
