package reconciler

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// Reasons of a True ServicesExclusive condition. A False one carries the
// plan's warning reason, planner.WarningServicesClusterShared, as its
// events do.
const (
	ReasonServicesExclusive = "Exclusive"
	ReasonServicesDisabled  = "ServicesDisabled"
)

// setServicesExclusive says whether another mesh with multi-cluster
// services shares a member cluster of this one: the plan's
// ServicesClusterShared warnings, which name this mesh's entries only.
func setServicesExclusive(st *meshv1alpha1.ClusterMeshStatus, gen int64, now metav1.Time, mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan, removing string) {
	if mesh.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled && removing != "" {
		// Kept until every member is confirmed clean: it marks, across
		// restarts, that the mesh's imports may remain (servicesMayRemain).
		setCondition(st, gen, now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionTrue, ReasonServicesRemoving, removing)
		return
	}
	if mesh.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled {
		setCondition(st, gen, now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionTrue, ReasonServicesDisabled,
			"the mesh does not carry multi-cluster services")
		return
	}
	var shared []string
	for _, w := range sharedWarnings(plan) {
		shared = append(shared, issueText(w))
	}
	if len(shared) == 0 {
		setCondition(st, gen, now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionTrue, ReasonServicesExclusive,
			"no other ClusterMesh with multiClusterServices Enabled has verified a member cluster of this one")
		return
	}
	setCondition(st, gen, now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionFalse, planner.WarningServicesClusterShared,
		summarize(shared, 5))
}

// servicesSharedEvents announce each shared cluster once, as a fact.
func servicesSharedEvents(plan *planner.Plan) []meshEvent {
	var out []meshEvent
	for _, w := range sharedWarnings(plan) {
		out = append(out, meshEvent{Type: corev1.EventTypeWarning, Reason: w.Reason, Message: issueText(w)})
	}
	return out
}

func sharedWarnings(plan *planner.Plan) []meshv1alpha1.PlanIssue {
	var out []meshv1alpha1.PlanIssue
	for _, w := range plan.View.Warnings {
		if w.Reason == planner.WarningServicesClusterShared {
			out = append(out, w)
		}
	}
	return out
}

// yieldedText is why a mesh that shares clusters with an earlier services
// mesh is not Ready: it holds them against the one-ClusterSet rule.
func yieldedText(plan *planner.Plan) string {
	return fmt.Sprintf("%s is False (%s): another ClusterMesh with multiClusterServices Enabled, created earlier, has verified %s too",
		meshv1alpha1.ConditionServicesExclusive, planner.WarningServicesClusterShared, strings.Join(plan.ServicesYielded, ", "))
}
