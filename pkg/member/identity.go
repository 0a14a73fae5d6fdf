// Package member defines the least-privileged identity kilo-mesh-apiserver
// uses on a member cluster: a namespace, a ServiceAccount, a ClusterRole of
// BaseRights and its binding, and for meshes with multi-cluster services a
// second ClusterRole of ServicesRights and its binding. This one definition
// is what `kubectl mesh join` applies, what artifacts/member, the
// member-services component and the member chart hold, and what the docs
// list (all written by `make generate`, checked by `make verify`), so none
// of them drifts from another.
package member

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// Names of the identity's objects on every member cluster.
const (
	Namespace          = "kilo-mesh-member"
	ServiceAccount     = "kilo-mesh-member"
	ClusterRole        = "kilo-mesh-member"
	ClusterRoleBinding = ClusterRole
	// ServicesClusterRole and its binding add ServicesRules to the same
	// ServiceAccount; a member of meshes without services has neither.
	ServicesClusterRole        = "kilo-mesh-member:services"
	ServicesClusterRoleBinding = ServicesClusterRole

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

// ServicesFix says how to grant the services rights on the cluster of
// entry in mesh namespace/name, the ways they ship: the member identity's
// on a member cluster, the server's own (HostServicesObjects) on the local
// one.
func ServicesFix(namespace, mesh, entry string, local bool) string {
	if local {
		return "grant the server's own identity its services rights on the cluster it runs in: install with hostServices.enabled=true, " +
			"or add the kustomize component artifacts/components/host-services"
	}
	return fmt.Sprintf("grant the member identity its services rights: kubectl mesh join %s -n %s --name %s --member-kubeconfig FILE --services, "+
		"or the member chart with services.enabled=true, or kubectl apply -k artifacts/overlays/member-services", mesh, namespace, entry)
}

func labels() map[string]string { return map[string]string{LabelPartOf: PartOfValue} }

// Objects returns the identity's objects in the order they must be applied
// (the namespace before what lives in it), with their TypeMeta set.
func Objects() []runtime.Object {
	return append([]runtime.Object{
		&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: Namespace, Labels: labels()},
		},
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Namespace: Namespace, Labels: labels()},
		},
	}, roleAndBinding(ClusterRole, labels(), BaseRules(), Namespace, ServiceAccount)...)
}

// ServicesObjects returns the ClusterRole of ServicesRules and its binding
// to the identity's ServiceAccount, which Objects must precede.
func ServicesObjects() []runtime.Object {
	return roleAndBinding(ServicesClusterRole, labels(), ServicesRules(), Namespace, ServiceAccount)
}
