package member

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// CoreDNS's role reads ServiceImports and nothing else, and is bound to
// CoreDNS's ServiceAccount alone.
func TestCoreDNSObjects(t *testing.T) {
	objs := CoreDNSObjects("dns", "resolver", nil)
	role, ok := objs[0].(*rbacv1.ClusterRole)
	if !ok || len(objs) != 2 {
		t.Fatalf("objects %T, want a ClusterRole and its binding", objs)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{"multicluster.x-k8s.io"}, Resources: []string{"serviceimports"}, Verbs: []string{"list", "watch"}}}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("rules %+v, want %+v", role.Rules, want)
	}
	binding := objs[1].(*rbacv1.ClusterRoleBinding)
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "resolver", Namespace: "dns"}}
	if !reflect.DeepEqual(binding.Subjects, subjects) || binding.RoleRef.Name != role.Name || role.Name == ClusterRole {
		t.Errorf("binding %+v to %+v, want %+v to %s, a role of its own", binding.Subjects, binding.RoleRef, subjects, role.Name)
	}
}
