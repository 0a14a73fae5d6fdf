package reconciler

import (
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plancache"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

func TestUntilCheckInExpiry(t *testing.T) {
	now := time.Unix(1_000_000, 500_000_000)
	for _, tc := range []struct {
		name string
		plan *planner.Plan
		want time.Duration
	}{
		{"no plan", nil, 0},
		{"no node will expire", &planner.Plan{}, 0},
		{"a node expires in 19.5 s", &planner.Plan{CheckInExpiry: now.Add(19500 * time.Millisecond)}, 19500*time.Millisecond + expiryMargin},
		// The moment passed: the check-ins since are read once the plan
		// cache plans anew.
		{"the plan's moment passed", &planner.Plan{CheckInExpiry: now.Add(-time.Second)}, plancache.MaxAge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := untilCheckInExpiry(tc.plan, now); got != tc.want {
				t.Errorf("untilCheckInExpiry = %v, want %v", got, tc.want)
			}
		})
	}
}
