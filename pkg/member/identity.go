// Package member defines the least-privileged identity kilo-mesh-apiserver
// uses on a member cluster: a namespace, a ServiceAccount, a ClusterRole and
// its binding. This one definition is what `kubectl mesh join` applies and
// what artifacts/member holds (written by `make generate`, checked by
// `make verify`), so the shipped manifest and the plugin never drift apart.
package member

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// Names of the identity's objects on every member cluster.
const (
	Namespace          = "kilo-mesh-member"
	ServiceAccount     = "kilo-mesh-member"
	ClusterRole        = "kilo-mesh-member"
	ClusterRoleBinding = "kilo-mesh-member"

	// IdentityNamespace is the namespace whose UID identifies a member
	// cluster: it exists on every cluster and is never recreated, so two
	// kubeconfigs that read the same UID reach the same cluster.
	IdentityNamespace = metav1.NamespaceSystem

	// LabelPartOf marks every object of the identity.
	LabelPartOf = "app.kubernetes.io/part-of"
	// PartOfValue is the value of LabelPartOf.
	PartOfValue = "kilo-mesh-apiserver"
)

// Username is the name the member cluster authenticates the identity's
// tokens as.
func Username() string {
	return serviceaccount.MakeUsername(Namespace, ServiceAccount)
}

// Rules are everything the server does on a member cluster: read Nodes
// (Kilo's annotations), manage Kilo Peers, read namespaces (the UID of
// kube-system verifies which cluster a kubeconfig reaches; the others tell
// where a multi-cluster service may be imported), and for those services
// read ServiceExports and write their conditions, and manage ServiceImports,
// derived Services and their EndpointSlices. Nothing else: no Secrets, no
// Pods, no writes to Nodes or namespaces.
func Rules() []rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	return append([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: read},
		{
			APIGroups: []string{kilov1alpha1.GroupName},
			Resources: []string{kilov1alpha1.PeerResource.Resource},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		},
	}, ServicesRules()...)
}

// ServicesRules are the rules of Rules for multi-cluster services; the
// server's own identity needs the same on the host cluster when a local
// cluster takes part in services (HostServicesObjects).
func ServicesRules() []rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	manage := []string{"get", "list", "watch", "create", "update", "delete"}
	return []rbacv1.PolicyRule{
		// Services and EndpointSlices cannot be limited to the mesh's own
		// by RBAC; the server only writes and deletes those carrying its
		// labels (docs/security.md).
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: manage},
		{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}, Verbs: manage},
		{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{mcsv1beta1.ServiceExportPluralName}, Verbs: read},
		{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{mcsv1beta1.ServiceExportPluralName + "/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{mcsv1beta1.ServiceImportPluralName}, Verbs: manage},
		{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{mcsv1beta1.ServiceImportPluralName + "/status"}, Verbs: []string{"update"}},
	}
}

func labels() map[string]string { return map[string]string{LabelPartOf: PartOfValue} }

// Objects returns the identity's objects in the order they must be applied
// (the namespace before what lives in it), with their TypeMeta set.
func Objects() []runtime.Object {
	return []runtime.Object{
		&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: Namespace, Labels: labels()},
		},
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Namespace: Namespace, Labels: labels()},
		},
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: ClusterRole, Labels: labels()},
			Rules:      Rules(),
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleBinding, Labels: labels()},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRole},
			Subjects: []rbacv1.Subject{{
				Kind: rbacv1.ServiceAccountKind, Name: ServiceAccount, Namespace: Namespace,
			}},
		},
	}
}
