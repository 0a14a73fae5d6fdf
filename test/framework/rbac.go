package framework

import (
	"context"
	"fmt"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// WaitClusterRolesAggregated waits until kube-controller-manager's
// clusterrole-aggregation controller has given every ClusterRole with an
// aggregationRule the rules of the ClusterRoles its selectors match. Call it
// after installing ClusterRoles labelled rbac.authorization.k8s.io/aggregate-to-*
// before relying on admin, edit or view; StartMeshServer does so for
// artifacts/deploy/user-roles.yaml.
func (e *Env) WaitClusterRolesAggregated(ctx context.Context, cluster int) error {
	client := e.Client(cluster, UserAdmin).RbacV1().ClusterRoles()
	return poll(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) error {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, role := range list.Items {
			if missing := missingAggregatedRules(role, list.Items); missing != "" {
				return fmt.Errorf("ClusterRole %s lacks the rules of %s", role.Name, missing)
			}
		}
		return nil
	})
}

// missingAggregatedRules names a ClusterRole whose rules role aggregates
// and does not hold yet, or returns "".
func missingAggregatedRules(role rbacv1.ClusterRole, all []rbacv1.ClusterRole) string {
	if role.AggregationRule == nil {
		return ""
	}
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return fmt.Sprintf("an invalid selector (%v)", err)
		}
		for _, other := range all {
			if other.Name == role.Name || !selector.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !slices.ContainsFunc(role.Rules, func(x rbacv1.PolicyRule) bool { return apiequality.Semantic.DeepEqual(x, r) }) {
					return other.Name
				}
			}
		}
	}
	return ""
}
