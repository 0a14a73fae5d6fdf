package reconciler

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

func planWithAccess(generated metav1.Time, ha meshv1alpha1.HostAccessPlan) *planner.Plan {
	p := testPlan()
	p.View.GeneratedAt = generated
	p.View.HostAccess = &ha
	return p
}

// TestGrantedCondition: the condition repeats the plan's host access, and
// its transition time (the start of an upgrade grace period) is the plan's
// and stays while the status does.
func TestGrantedCondition(t *testing.T) {
	mesh := testMesh()
	grace := meshv1alpha1.HostAccessPlan{Basis: meshv1alpha1.HostAccessBasisUpgradeGracePeriod, Reason: planner.HostReasonUpgradeGracePeriod, Message: "until then"}
	planned := metav1.NewTime(t0.Add(-time.Second))
	mesh.Status = buildStatus(statusInput{mesh: mesh, plan: planWithAccess(planned, grace), outcomes: allApplied(), now: t0})
	c := wantCondition(t, mesh.Status, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonUpgradeGracePeriod)
	if !c.LastTransitionTime.Equal(&planned) || c.Message != "until then" || c.ObservedGeneration != mesh.Generation {
		t.Errorf("condition %+v", c)
	}

	expired := meshv1alpha1.HostAccessPlan{Basis: meshv1alpha1.HostAccessBasisNone, Reason: planner.HostReasonGracePeriodExpired, Message: "over"}
	mesh.Status = buildStatus(statusInput{mesh: mesh, plan: planWithAccess(t1, expired), outcomes: allApplied(), now: t1})
	if c := wantCondition(t, mesh.Status, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonGracePeriodExpired); !c.LastTransitionTime.Equal(&planned) {
		t.Errorf("still False, yet the transition time moved to %s", c.LastTransitionTime)
	}

	granted := meshv1alpha1.HostAccessPlan{Granted: true, Basis: meshv1alpha1.HostAccessBasisGrant, Reason: planner.HostReasonGranted, Message: "covered"}
	mesh.Status = buildStatus(statusInput{mesh: mesh, plan: planWithAccess(t1, granted), outcomes: allApplied(), now: t1})
	wantCondition(t, mesh.Status, meshv1alpha1.ConditionGranted, metav1.ConditionTrue, planner.HostReasonGranted)

	mesh.Status = buildStatus(statusInput{mesh: mesh, planErr: errors.New("the grants have not synced"), now: t1})
	wantCondition(t, mesh.Status, meshv1alpha1.ConditionGranted, metav1.ConditionUnknown, ReasonPlanFailed)
}

func TestGrantedEvents(t *testing.T) {
	if ev := grantedEvents(planWithAccess(t0, meshv1alpha1.HostAccessPlan{Granted: true, Reason: planner.HostReasonPeerRights})); len(ev) != 0 {
		t.Errorf("events for granted access: %v", ev)
	}
	ev := grantedEvents(planWithAccess(t0, meshv1alpha1.HostAccessPlan{Reason: planner.HostReasonNoGrant, Message: "no grant"}))
	if len(ev) != 1 || ev[0].Reason != planner.HostReasonNoGrant || ev[0].Message != "no grant" || ev[0].Type != "Warning" {
		t.Errorf("events %v", ev)
	}
}

func TestUntilGraceEnds(t *testing.T) {
	ends := metav1.NewTime(t0.Add(time.Minute))
	p := planWithAccess(t0, meshv1alpha1.HostAccessPlan{Reason: planner.HostReasonUpgradeGracePeriod, GracePeriodEnds: &ends})
	if d := untilGraceEnds(p, t0.Time); d != time.Minute+expiryMargin {
		t.Errorf("until the end: %s", d)
	}
	if d := untilGraceEnds(p, t0.Add(2*time.Minute)); d != 0 {
		t.Errorf("after the end: %s", d)
	}
	if d := untilGraceEnds(testPlan(), t0.Time); d != 0 {
		t.Errorf("without a grace period: %s", d)
	}
	for _, tc := range []struct{ a, b, want time.Duration }{{0, 0, 0}, {0, 5, 5}, {5, 0, 5}, {3, 5, 3}, {5, 3, 3}} {
		if got := sooner(tc.a, tc.b); got != tc.want {
			t.Errorf("sooner(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}
