package reconciler

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// setGranted repeats the plan's host access as the Granted condition. Its
// transition time is the plan's: the upgrade grace period of a mesh stored
// before grants existed runs from it, across restarts.
func setGranted(st *meshv1alpha1.ClusterMeshStatus, gen int64, plan *planner.Plan) {
	ha := plan.View.HostAccess
	if ha == nil {
		return
	}
	status := metav1.ConditionFalse
	if ha.Granted {
		status = metav1.ConditionTrue
	}
	setCondition(st, gen, plan.View.GeneratedAt, meshv1alpha1.ConditionGranted, status, ha.Reason, ha.Message)
}

// grantedEvents announce what host access withholds. The filter of facts
// sends each once, when it changes; the message names the grace period's
// end, not the time left, so that it stays the same until something does.
func grantedEvents(plan *planner.Plan) []meshEvent {
	ha := plan.View.HostAccess
	if ha == nil || ha.Granted {
		return nil
	}
	return []meshEvent{{Type: corev1.EventTypeWarning, Reason: ha.Reason, Message: ha.Message}}
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
