package reconciler

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

func TestCredentialsCondition(t *testing.T) {
	expiring := meshv1alpha1.PlanIssue{Reason: planner.WarningCredentialExpiring, Cluster: "us", Message: "expires at 2026-12-01T00:00:00Z; renew it with kubectl mesh join --refresh"}
	expired := meshv1alpha1.PlanIssue{Reason: planner.WarningCredentialExpired, Cluster: "eu", Message: "expired at 2026-11-01T00:00:00Z"}
	other := meshv1alpha1.PlanIssue{Reason: planner.WarningPrivateEndpoint, Cluster: "us", Message: "private"}
	for _, tc := range []struct {
		name     string
		warnings []meshv1alpha1.PlanIssue
		status   metav1.ConditionStatus
		reason   string
		contains []string
	}{
		{"no credential warning", []meshv1alpha1.PlanIssue{other}, metav1.ConditionTrue, ReasonValid, []string{"30 days"}},
		{"one expiring", []meshv1alpha1.PlanIssue{other, expiring}, metav1.ConditionFalse, ReasonCredentialsExpire,
			[]string{"CredentialExpiring (us)", "2026-12-01T00:00:00Z", "--refresh"}},
		{"expired beats expiring", []meshv1alpha1.PlanIssue{expiring, expired}, metav1.ConditionFalse, ReasonCredentialsExpired,
			[]string{"CredentialExpired (eu)", "CredentialExpiring (us)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan()
			p.View.Warnings = tc.warnings
			st := buildStatus(statusInput{mesh: testMesh(), plan: p, outcomes: allApplied(), now: t0})
			c := wantCondition(t, st, meshv1alpha1.ConditionCredentialsValid, tc.status, tc.reason)
			for _, want := range tc.contains {
				if !strings.Contains(c.Message, want) {
					t.Errorf("message %q lacks %q", c.Message, want)
				}
			}
			// Expiring credentials do not make the mesh unready.
			wantCondition(t, st, meshv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonReady)
			// A later pass with the same credentials writes nothing.
			mesh := testMesh()
			mesh.Status = st
			again := buildStatus(statusInput{mesh: mesh, plan: p, outcomes: allApplied(), now: t1})
			if statusChanged(&st, &again) {
				t.Errorf("status changed with nothing new: %+v", again.Conditions)
			}
		})
	}
	st := buildStatus(statusInput{mesh: testMesh(), planErr: errors.New("bad input"), outcomes: allApplied(), now: t0})
	wantCondition(t, st, meshv1alpha1.ConditionCredentialsValid, metav1.ConditionUnknown, ReasonPlanFailed)
}
