package member

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The host-services role is the member identity's services rules on the
// services objects and nothing else: no Nodes, namespaces or Peers (the
// server's own role on the host has those it needs), bound to the server's
// ServiceAccount alone.
func TestHostServicesObjects(t *testing.T) {
	objs := HostServicesObjects("mesh-ops")
	role, ok := objs[0].(*rbacv1.ClusterRole)
	if !ok || len(objs) != 2 {
		t.Fatalf("objects %T, want a ClusterRole and its binding", objs)
	}
	rules := ServicesRules()
	if !reflect.DeepEqual(role.Rules, rules[len(rules)-len(role.Rules):]) {
		t.Errorf("rules %+v are not the member identity's services rules", role.Rules)
	}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			if res == "nodes" || res == "namespaces" || res == "peers" || res == "secrets" {
				t.Errorf("the host-services role grants %v on %s", r.Verbs, res)
			}
		}
	}
	binding := objs[1].(*rbacv1.ClusterRoleBinding)
	want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "kilo-mesh-apiserver", Namespace: "mesh-ops"}}
	if !reflect.DeepEqual(binding.Subjects, want) || binding.RoleRef.Name != role.Name {
		t.Errorf("binding %+v to %+v, want %+v to %s", binding.Subjects, binding.RoleRef, want, role.Name)
	}
}
