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

// untilGraceEnds is how long until a mesh in its upgrade grace period
// loses its access: time passing is the only event then. Zero when none.
func untilGraceEnds(plan *planner.Plan, now time.Time) time.Duration {
	if plan == nil || plan.View.HostAccess == nil || plan.View.HostAccess.GracePeriodEnds == nil {
		return 0
	}
	if d := plan.View.HostAccess.GracePeriodEnds.Sub(now); d > 0 {
		return d + expiryMargin
	}
	return 0
}

// cacheRecheck is when a mesh is looked at again after a pass that found
// writes of its own the member caches had not shown yet.
const cacheRecheck = time.Second

// settleRecheck is when a mesh whose member caches have not settled is
// looked at again if no change of theirs came first.
const settleRecheck = 5 * time.Second

// syncResult says when to look at a mesh again without a change.
type syncResult struct {
	requeueAfter time.Duration
}

// nextPass is when to look at a mesh again after a pass that succeeded:
// when a node's check-in expires, when an upgrade grace period ends, when
// a departure is retried, and soon if the member caches have not shown the
// pass's own writes yet (their events requeue the mesh; this is the safety
// net). Zero means only a change brings the mesh back.
func nextPass(plan *planner.Plan, now time.Time, departures time.Duration, unseen bool) time.Duration {
	next := sooner(sooner(untilCheckInExpiry(plan, now), untilGraceEnds(plan, now)), departures)
	if unseen {
		next = sooner(next, cacheRecheck)
	}
	return next
}

// sooner is the shorter of two requeue delays, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
