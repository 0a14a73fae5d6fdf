package reconciler

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// Two clusters behind NAT that nothing relays between make the mesh not
// Ready, with a reason users can match and a message naming the pair; a
// relayed pair is carried.
func TestBuildStatusRelay(t *testing.T) {
	t.Run("no path", func(t *testing.T) {
		plan := testPlan()
		plan.DesiredPeers["eu"], plan.DesiredPeers["us"] = planner.PeerList{}, planner.PeerList{}
		plan.View.Relay = &meshv1alpha1.RelayPlan{Basis: meshv1alpha1.RelayBasisNone, Message: "no member cluster can relay between the clusters behind NAT: see refused"}
		plan.View.Paths = []meshv1alpha1.PathPlan{{Clusters: []string{"eu", "us"}, Kind: meshv1alpha1.PathNone, Reason: planner.ConflictNoRelay, Message: "both are behind NAT"}}
		outcomes := map[string]targetOutcome{"eu": {reconciled: true}, "us": {reconciled: true}}
		for i := range plan.View.Targets {
			plan.View.Targets[i].DesiredPeers = 0
		}
		st := buildStatus(statusInput{mesh: testMesh(), plan: counted(plan), outcomes: outcomes, now: t0})
		c := wantCondition(t, st, meshv1alpha1.ConditionReady, metav1.ConditionFalse, planner.ConflictNoRelay)
		if !strings.Contains(c.Message, "eu and us") || strings.Contains(c.Message, "nothing is carried") {
			t.Errorf("Ready message %q", c.Message)
		}
	})
	t.Run("relayed", func(t *testing.T) {
		plan := testPlan()
		hub := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "hub-a",
			Labels:      map[string]string{planner.LabelSourceCluster: "hub"},
			Annotations: map[string]string{planner.AnnotationRelays: "us"}}}
		plan.DesiredPeers["eu"] = planner.PeerListOf(hub)
		plan.View.Paths = []meshv1alpha1.PathPlan{{Clusters: []string{"eu", "us"}, Kind: meshv1alpha1.PathRelayed, Via: "hub", Reason: planner.PathReasonBothBehindNAT}}
		outcomes := allApplied()
		outcomes["eu"] = targetOutcome{reconciled: true, applied: 1}
		plan.View.Targets[0].DesiredPeers = 1
		st := buildStatus(statusInput{mesh: testMesh(), plan: counted(plan), outcomes: outcomes, now: t0})
		wantCondition(t, st, meshv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	})
}
