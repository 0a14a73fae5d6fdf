package reconciler

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// TestBuildStatusServicesExclusive: a cluster shared with another
// services mesh makes ServicesExclusive False with the plan's reason and
// this mesh's entry; Ready goes False only for the mesh that yields the
// cluster (the later one), with that reason when nothing else is wrong.
func TestBuildStatusServicesExclusive(t *testing.T) {
	shared := func(cluster, lead string) meshv1alpha1.PlanIssue {
		return meshv1alpha1.PlanIssue{Reason: planner.WarningServicesClusterShared, Cluster: cluster, Message: lead}
	}
	tests := []struct {
		name        string
		services    meshv1alpha1.MultiClusterServices
		warnings    []meshv1alpha1.PlanIssue
		yielded     []string
		unreachable []string
		removing    string
		exclusive   metav1.ConditionStatus
		exclReason  string
		ready       metav1.ConditionStatus
		readyReason string
		messages    []string // in ServicesExclusive's or Ready's message
		events      int
	}{
		{name: "services disabled", services: meshv1alpha1.MultiClusterServicesDisabled,
			exclusive: metav1.ConditionTrue, exclReason: ReasonServicesDisabled, ready: metav1.ConditionTrue, readyReason: ReasonReady},
		{name: "services disabled, objects left", services: meshv1alpha1.MultiClusterServicesDisabled, removing: "remain on two (3 objects being deleted)",
			exclusive: metav1.ConditionTrue, exclReason: ReasonServicesRemoving, ready: metav1.ConditionTrue, readyReason: ReasonReady,
			messages: []string{"remain on two (3 objects being deleted)"}},
		{name: "services on no shared cluster", services: meshv1alpha1.MultiClusterServicesEnabled,
			exclusive: metav1.ConditionTrue, exclReason: ReasonServicesExclusive, ready: metav1.ConditionTrue, readyReason: ReasonReady},
		{name: "shared with a later mesh", services: meshv1alpha1.MultiClusterServicesEnabled,
			warnings:  []meshv1alpha1.PlanIssue{shared("us", "created later")},
			exclusive: metav1.ConditionFalse, exclReason: planner.WarningServicesClusterShared,
			ready: metav1.ConditionTrue, readyReason: ReasonReady, messages: []string{"ServicesClusterShared (us): created later"}, events: 1},
		{name: "shared with an earlier mesh", services: meshv1alpha1.MultiClusterServicesEnabled,
			warnings: []meshv1alpha1.PlanIssue{shared("us", "created earlier")}, yielded: []string{"us"},
			exclusive: metav1.ConditionFalse, exclReason: planner.WarningServicesClusterShared,
			ready: metav1.ConditionFalse, readyReason: planner.WarningServicesClusterShared,
			messages: []string{"ServicesClusterShared (us): created earlier", "ServicesExclusive is False (ServicesClusterShared): another ClusterMesh with multiClusterServices Enabled, created earlier, has verified us too"},
			events:   1},
		{name: "shared with an earlier mesh and unreachable", services: meshv1alpha1.MultiClusterServicesEnabled,
			warnings: []meshv1alpha1.PlanIssue{shared("eu", "created later"), shared("us", "created earlier")}, yielded: []string{"us"}, unreachable: []string{"eu"},
			exclusive: metav1.ConditionFalse, exclReason: planner.WarningServicesClusterShared,
			ready: metav1.ConditionFalse, readyReason: ReasonNotReady,
			messages: []string{"ServicesClusterShared (eu): created later; ServicesClusterShared (us): created earlier", "ClustersReachable is False", "has verified us too"},
			events:   2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mesh := testMesh()
			mesh.Spec.MultiClusterServices = tt.services
			plan := testPlan(tt.unreachable...)
			plan.View.Warnings = tt.warnings
			plan.ServicesYielded = tt.yielded
			st := buildStatus(statusInput{mesh: mesh, plan: plan, outcomes: allApplied(), servicesRemoving: tt.removing, now: t0})
			excl := wantCondition(t, st, meshv1alpha1.ConditionServicesExclusive, tt.exclusive, tt.exclReason)
			ready := wantCondition(t, st, meshv1alpha1.ConditionReady, tt.ready, tt.readyReason)
			for _, m := range tt.messages {
				if !strings.Contains(excl.Message+" | "+ready.Message, m) {
					t.Errorf("%q missing from ServicesExclusive %q and Ready %q", m, excl.Message, ready.Message)
				}
			}
			events := servicesSharedEvents(plan)
			if len(events) != tt.events {
				t.Errorf("%d events, want %d: %+v", len(events), tt.events, events)
			}
			for _, e := range events {
				if e.Reason != planner.WarningServicesClusterShared || e.Type != "Warning" {
					t.Errorf("event %+v", e)
				}
			}
		})
	}
}

// TestBuildStatusServicesExclusivePlanFailed: without a plan nothing is
// known of the other meshes.
func TestBuildStatusServicesExclusivePlanFailed(t *testing.T) {
	mesh := testMesh()
	mesh.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
	st := buildStatus(statusInput{mesh: mesh, planErr: errors.New("bad input"), now: t0})
	wantCondition(t, st, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionUnknown, ReasonPlanFailed)
}

// TestBuildStatusServicesRemovingPlanFailed: a removal under way stays
// recorded when the plan fails, so that it goes on after a restart.
func TestBuildStatusServicesRemovingPlanFailed(t *testing.T) {
	mesh := testMesh()
	mesh.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesDisabled
	st := buildStatus(statusInput{mesh: mesh, planErr: errors.New("bad input"), servicesRemoving: "remain on us", now: t0})
	if c := wantCondition(t, st, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionTrue, ReasonServicesRemoving); c.Message != "remain on us" {
		t.Errorf("message %q", c.Message)
	}
}
