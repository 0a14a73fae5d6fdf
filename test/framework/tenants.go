package framework

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Tenants of an environment: fresh names and namespaces, RBAC grants in
// them, and questions to the authorizer about what a user may do.

// UniqueName returns prefix followed by a random suffix, a valid DNS label
// if prefix is one of at most 56 characters.
func UniqueName(prefix string) string {
	return prefix + "-" + randomHex(3)
}

// NewNamespace creates a namespace with a fresh name (prefix-<random>) on
// the host cluster and returns its name. Namespaces are never deleted (no
// namespace controller runs), so tests use fresh names instead.
func (e *Env) NewNamespace(ctx context.Context, prefix string) (string, error) {
	return e.NewNamespaceOn(ctx, HostCluster, prefix)
}

// NewNamespaceOn is NewNamespace on cluster i.
func (e *Env) NewNamespaceOn(ctx context.Context, cluster int, prefix string) (string, error) {
	client := e.Client(cluster, UserAdmin)
	for range 5 {
		name := UniqueName(prefix)
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("could not find a free namespace name for prefix %q", prefix)
}

// GrantNamespaceRole binds ClusterRole clusterRole to user in namespace ns of
// cluster i and waits until RBAC answers accordingly.
func (e *Env) GrantNamespaceRole(ctx context.Context, cluster int, ns, user, clusterRole string) error {
	client := e.Client(cluster, UserAdmin)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + clusterRole, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Wait until the binding is in kube-apiserver's RBAC cache: probe with a
	// verb the role grants.
	var probe authorizationv1.ResourceAttributes
	switch clusterRole {
	case "view":
		probe = authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "configmaps"}
	case "edit", "admin":
		probe = authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "configmaps"}
	default:
		return nil
	}
	return e.waitAllowed(ctx, cluster, user, probe)
}

// Can reports whether user may perform the action on cluster i, as answered
// by a SelfSubjectAccessReview made as that user.
func (e *Env) Can(ctx context.Context, cluster int, user string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	res, err := e.Client(cluster, user).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}

func (e *Env) waitAllowed(ctx context.Context, cluster int, user string, attrs authorizationv1.ResourceAttributes) error {
	return poll(ctx, 50*time.Millisecond, 30*time.Second, func(ctx context.Context) error {
		ok, err := e.Can(ctx, cluster, user, attrs)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s may not %s %s in %q yet", user, attrs.Verb, attrs.Resource, attrs.Namespace)
		}
		return nil
	})
}

// setupTenants creates the tenant namespaces and bindings on the host
// cluster, once kube-controller-manager has filled the aggregated
// ClusterRoles (admin, edit, view) they bind.
func (e *Env) setupTenants(ctx context.Context) error {
	for i := range e.clusters {
		if err := e.WaitClusterRolesAggregated(ctx, i); err != nil {
			return fmt.Errorf("aggregating ClusterRoles on cluster %d: %w", i, err)
		}
	}
	client := e.Client(HostCluster, UserAdmin)
	for _, ns := range []string{NamespaceTenantA, NamespaceTenantB} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, b := range []struct{ ns, user, role string }{
		{NamespaceTenantA, UserTenantA, "edit"},
		{NamespaceTenantB, UserTenantB, "edit"},
		{NamespaceTenantA, UserViewerA, "view"},
	} {
		if err := e.GrantNamespaceRole(ctx, HostCluster, b.ns, b.user, b.role); err != nil {
			return fmt.Errorf("binding %s to %s in %s: %w", b.user, b.role, b.ns, err)
		}
	}
	return nil
}
