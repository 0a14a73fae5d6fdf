package framework

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AggregateClusterRoles does once what kube-controller-manager's
// clusterrole-aggregation controller does continuously: every ClusterRole
// with an aggregationRule gets the union of the rules of the ClusterRoles its
// selectors match. Without it the bootstrap roles admin, edit and view stay
// empty here. Call it again after installing ClusterRoles labelled
// rbac.authorization.k8s.io/aggregate-to-*; StartMeshServer does so for
// artifacts/deploy/user-roles.yaml.
func (e *Env) AggregateClusterRoles(ctx context.Context, cluster int) error {
	client := e.Client(cluster, UserAdmin).RbacV1().ClusterRoles()
	// Aggregated roles can feed other aggregated roles (view -> edit ->
	// admin): repeat until nothing changes.
	for range 10 {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		roles := list.Items
		slices.SortFunc(roles, func(a, b rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
		changed := false
		for i := range roles {
			role := &roles[i]
			if role.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, sel := range role.AggregationRule.ClusterRoleSelectors {
				selector, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					return fmt.Errorf("ClusterRole %s: %w", role.Name, err)
				}
				for _, other := range roles {
					if other.Name == role.Name || !selector.Matches(labels.Set(other.Labels)) {
						continue
					}
					for _, r := range other.Rules {
						if !slices.ContainsFunc(rules, func(x rbacv1.PolicyRule) bool { return reflect.DeepEqual(x, r) }) {
							rules = append(rules, r)
						}
					}
				}
			}
			if reflect.DeepEqual(rules, role.Rules) || (len(rules) == 0 && len(role.Rules) == 0) {
				continue
			}
			role.Rules = rules
			if _, err := client.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("updating ClusterRole %s: %w", role.Name, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("ClusterRole aggregation did not settle")
}
