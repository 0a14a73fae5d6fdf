package reconciler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// TestServicesMayRemain: only a status that once showed services, and not
// yet their confirmed removal, sends a Disabled mesh listing its members.
func TestServicesMayRemain(t *testing.T) {
	tests := []struct {
		name   string
		reason string // of ServicesExclusive; "" for none
		want   bool
	}{
		{name: "created Disabled, never reconciled", want: false},
		{name: "removal confirmed", reason: ReasonServicesDisabled, want: false},
		{name: "was Enabled", reason: ReasonServicesExclusive, want: true},
		{name: "was Enabled on a shared cluster", reason: planner.WarningServicesClusterShared, want: true},
		{name: "removal under way", reason: ReasonServicesRemoving, want: true},
		{name: "plan failed meanwhile", reason: ReasonPlanFailed, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mesh := testMesh()
			if tt.reason != "" {
				mesh.Status.Conditions = []metav1.Condition{{Type: meshv1alpha1.ConditionServicesExclusive, Status: metav1.ConditionTrue, Reason: tt.reason}}
			}
			if got := servicesMayRemain(mesh); got != tt.want {
				t.Errorf("servicesMayRemain = %v, want %v", got, tt.want)
			}
		})
	}
}
