package planner

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// CheckedIn reports whether Kilo counts node as alive at now: its kg wrote
// kilo.squat.ai/last-seen less than 60 s before. Caches use it to tell a
// routine check-in, which changes no plan, from a node coming back.
func CheckedIn(node *corev1.Node, now time.Time) bool {
	ok, _ := checkedIn(node.Annotations[AnnotationLastSeen], now)
	return ok
}
