package reconciler

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// credentialWarnings are the plan's warnings about member credentials that
// expire soon or have expired. The planner decides which (it compares the
// expiry with the plan's time); status and events only report them.
func credentialWarnings(plan *planner.Plan) (expiring, expired []meshv1alpha1.PlanIssue) {
	for _, w := range plan.View.Warnings {
		switch w.Reason {
		case planner.WarningCredentialExpiring:
			expiring = append(expiring, w)
		case planner.WarningCredentialExpired:
			expired = append(expired, w)
		}
	}
	return expiring, expired
}

// setCredentialsCondition sets CredentialsValid: False while a member
// cluster's credential expires within planner.CredentialRenewWithin or has
// expired, naming the clusters, the expiry and the command that renews it.
// It does not touch Ready: the mesh works until the credential expires, and
// an expired one shows there as an unreachable cluster. The messages hold
// expiry times, not countdowns, so the status is not rewritten every day.
func setCredentialsCondition(st *meshv1alpha1.ClusterMeshStatus, in statusInput) {
	gen, now := in.mesh.Generation, in.now
	expiring, expired := credentialWarnings(in.plan)
	if len(expiring)+len(expired) == 0 {
		setCondition(st, gen, now, meshv1alpha1.ConditionCredentialsValid, metav1.ConditionTrue, ReasonValid,
			fmt.Sprintf("no member cluster's credential expires within %d days", int(planner.CredentialRenewWithin.Hours()/24)))
		return
	}
	reason := ReasonCredentialsExpire
	if len(expired) > 0 {
		reason = ReasonCredentialsExpired
	}
	var items []string
	for _, w := range append(expired, expiring...) {
		items = append(items, issueText(w))
	}
	setCondition(st, gen, now, meshv1alpha1.ConditionCredentialsValid, metav1.ConditionFalse, reason, summarize(items, 3))
}

// reportCredentials exports the expiry of every member credential that
// states one, so that alerts can be set on it at any distance, and drops
// the series of a credential that no longer states one. states is nil when
// the pass had no plan: nothing new is known then.
func reportCredentials(mesh *meshv1alpha1.ClusterMesh, states map[string]clusters.ClusterState) {
	name := mesh.Namespace + "/" + mesh.Name
	for cluster, st := range states {
		if exp := st.CredentialExpiry; !exp.IsZero() {
			credentialExpiry.WithLabelValues(name, cluster).Set(float64(exp.Unix()))
		} else {
			credentialExpiry.DeleteLabelValues(name, cluster)
		}
	}
}
