package member

import (
	"os"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// make verify checks these too; the test says so sooner.
func TestRoleArtifactsAreCurrent(t *testing.T) {
	for _, tc := range []struct {
		path   string
		render func() ([]byte, error)
	}{
		{path: "../../artifacts/components/host-services/rbac.yaml", render: HostServicesManifest},
		{path: "../../artifacts/charts/kilo-mesh-apiserver/files/host-services-rules.yaml", render: HostServicesRulesYAML},
		{path: "../../artifacts/components/coredns/rbac.yaml", render: CoreDNSManifest},
		{path: "../../artifacts/charts/kilo-mesh-member/files/coredns-rules.yaml", render: CoreDNSRulesYAML},
	} {
		t.Run(tc.path, func(t *testing.T) {
			want, err := tc.render()
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s is not what pkg/member defines: run 'make generate'", tc.path)
			}
		})
	}
}

// The host-services role is the member identity's services rules and
// nothing else: no Nodes, namespaces or Peers (the server's own role on the
// host has those it needs), bound to the server's ServiceAccount alone.
func TestHostServicesObjects(t *testing.T) {
	objs := HostServicesObjects("mesh-ops")
	role, ok := objs[0].(*rbacv1.ClusterRole)
	if !ok || len(objs) != 2 {
		t.Fatalf("objects %T, want a ClusterRole and its binding", objs)
	}
	rules := Rules()
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
