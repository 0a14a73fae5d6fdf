package dns

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// labelManagedBy marks the RBAC objects enable created, the only ones
// disable deletes.
const labelManagedBy = "app.kubernetes.io/managed-by"

// rbacLabels are those of the objects enable creates.
func rbacLabels() map[string]string {
	return map[string]string{member.LabelPartOf: member.PartOfValue, labelManagedBy: cli.FieldManager}
}

// rbacObjects are the ClusterRole and binding for in's ServiceAccount.
func rbacObjects(in *install) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	objs := member.CoreDNSObjects(in.Namespace, in.ServiceAccount, rbacLabels())
	return objs[0].(*rbacv1.ClusterRole), objs[1].(*rbacv1.ClusterRoleBinding)
}

// canWatchImports asks the cluster whether in's ServiceAccount may list
// and watch ServiceImports in every namespace, as the multicluster option
// does.
func canWatchImports(ctx context.Context, kube kubernetes.Interface, in *install) (bool, error) {
	user := serviceaccount.MakeUsername(in.Namespace, in.ServiceAccount)
	for _, verb := range []string{"list", "watch"} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: append(serviceaccount.MakeGroupNames(in.Namespace), "system:authenticated"),
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: mcsv1beta1.GroupName, Resource: mcsv1beta1.ServiceImportPluralName, Verb: verb,
			},
		}}
		res, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("asking whether %s may %s ServiceImports: %w", user, verb, err)
		}
		if !res.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// applyRBAC creates the ClusterRole and binding, or brings those an
// earlier enable created back to what they should be; objects of those
// names that enable did not create are left alone and named.
func applyRBAC(ctx context.Context, kube kubernetes.Interface, in *install) error {
	role, binding := rbacObjects(in)
	if err := createOrUpdate(ctx, kube.RbacV1().ClusterRoles(), "ClusterRole", role, in,
		func(have *rbacv1.ClusterRole) { have.Rules = role.Rules }); err != nil {
		return err
	}
	if err := createOrUpdate(ctx, kube.RbacV1().ClusterRoleBindings(), "ClusterRoleBinding", binding, in,
		func(have *rbacv1.ClusterRoleBinding) { have.Subjects = binding.Subjects }); err != nil {
		return err
	}
	// The authorizer sees new bindings a moment later; CoreDNS must not
	// start watching before.
	var allowed bool
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		allowed, err = canWatchImports(ctx, kube, in)
		return allowed, err
	})
	if err != nil {
		return fmt.Errorf("ServiceAccount %s/%s still may not list and watch ServiceImports after the binding: %w", in.Namespace, in.ServiceAccount, err)
	}
	return nil
}

// objectClient is what createOrUpdate and remove need of a typed client.
type objectClient[T metav1.Object] interface {
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// createOrUpdate creates want, or sets what set sets on the object of its name
// that an earlier enable created; one that enable did not create is
// refused.
func createOrUpdate[T metav1.Object](ctx context.Context, c objectClient[T], kind string, want T, in *install, set func(have T)) error {
	have, err := c.Get(ctx, want.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.Create(ctx, want, metav1.CreateOptions{FieldManager: cli.FieldManager})
	case err == nil && ours(have.GetLabels()):
		set(have)
		_, err = c.Update(ctx, have, metav1.UpdateOptions{FieldManager: cli.FieldManager})
	case err == nil:
		return notOurs(kind, want.GetName(), in)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, want.GetName(), err)
	}
	return nil
}

func ours(labels map[string]string) bool { return labels[labelManagedBy] == cli.FieldManager }

func notOurs(kind, name string, in *install) error {
	return fmt.Errorf("%s %s exists, was not created by this command (the member chart's coredns.rbac, or kustomize's component?) and does not let %s/%s list and watch ServiceImports: "+
		"bind it to that ServiceAccount (the chart's coredns.serviceAccount) or remove it, then rerun", kind, name, in.Namespace, in.ServiceAccount)
}

// deleteRBAC deletes the ClusterRoleBinding and ClusterRole if enable
// created them, and says which it deleted.
func deleteRBAC(ctx context.Context, kube kubernetes.Interface) ([]string, error) {
	var deleted []string
	binding, err := remove(ctx, kube.RbacV1().ClusterRoleBindings(), "ClusterRoleBinding")
	if binding != "" {
		deleted = append(deleted, binding)
	}
	if err != nil {
		return deleted, err
	}
	role, err := remove(ctx, kube.RbacV1().ClusterRoles(), "ClusterRole")
	if role != "" {
		deleted = append(deleted, role)
	}
	return deleted, err
}

// remove deletes the object of CoreDNS's role's name if enable created it,
// with its UID as precondition; it returns what it deleted, if anything.
func remove[T metav1.Object](ctx context.Context, c objectClient[T], kind string) (string, error) {
	obj, err := c.Get(ctx, member.CoreDNSRole, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", kind, member.CoreDNSRole, err)
	}
	if !ours(obj.GetLabels()) {
		return "", nil
	}
	uid := obj.GetUID()
	if err := c.Delete(ctx, member.CoreDNSRole, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("deleting %s %s: %w", kind, member.CoreDNSRole, err)
	}
	return kind + " " + member.CoreDNSRole, nil
}

// rbacManifest renders the objects for --dry-run and for a Corefile left
// to the user.
func rbacManifest(in *install) ([]byte, error) {
	role, binding := rbacObjects(in)
	var out []byte
	for _, obj := range []runtime.Object{role, binding} {
		u, err := member.Unstructured(obj)
		if err != nil {
			return nil, err
		}
		b, err := yamlDoc(u.Object)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}
