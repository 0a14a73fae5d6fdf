package reconciler

import (
	"time"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
)

// expiryMargin lets the clock pass the second in which a node expires, as
// last-seen has a resolution of one second.
const expiryMargin = 100 * time.Millisecond

// nextExpiry is how long until the first node that Kilo counts as Ready
// now stops counting for lack of a check-in. A node going silent causes no
// event, only time passing, so the mesh is looked at again then. Zero means
// no node will expire.
func nextExpiry(states map[string]clusters.ClusterState, now time.Time) time.Duration {
	var first time.Time
	for _, st := range states {
		if !usable(st, true) {
			continue
		}
		for _, n := range st.Nodes {
			at, err := kilov1alpha1.CheckInExpires(n)
			if err != nil {
				continue
			}
			if at.After(now) && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
	}
	if first.IsZero() {
		return 0
	}
	return first.Sub(now) + expiryMargin
}
