package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
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

// DeployManifest returns the path of a file in artifacts/deploy.
func DeployManifest(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "artifacts", "deploy", name), nil
}

// InstallServerRBAC applies the namespace (artifacts/namespace), the
// server's RBAC, the aggregated user roles, the grant reader role and the
// (empty) Secret of the self-managed serving certificate from
// artifacts/deploy to the host cluster, then waits for the ClusterRoles to
// aggregate. Idempotent; StartMeshServer calls it.
func (e *Env) InstallServerRBAC(ctx context.Context) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	paths := []string{filepath.Join(root, "artifacts", "namespace", "namespace.yaml")}
	for _, name := range []string{"rbac.yaml", "user-roles.yaml", "grant-roles.yaml", "serving-cert.yaml"} {
		path, err := DeployManifest(name)
		if err != nil {
			return err
		}
		paths = append(paths, path)
	}
	for _, path := range paths {
		if _, _, err := e.Kubectl(ctx, HostCluster, UserAdmin, "apply", "-f", path); err != nil {
			return err
		}
	}
	return e.WaitClusterRolesAggregated(ctx, HostCluster)
}

// ServiceAccountToken returns a token of ServiceAccount ns/name on cluster i
// from the TokenRequest API (what `kubectl create token` does).
func (e *Env) ServiceAccountToken(ctx context.Context, cluster int, ns, name string, validity time.Duration) (string, error) {
	seconds := int64(validity / time.Second)
	tr, err := e.Client(cluster, UserAdmin).CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for ServiceAccount %s/%s on cluster %d: %w", ns, name, cluster, err)
	}
	return tr.Status.Token, nil
}
