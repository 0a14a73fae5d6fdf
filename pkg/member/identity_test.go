package member

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The identity has exactly these rights: a member cluster's admin can read
// these roles and see that the base one writes nothing but Peers and reads
// one namespace, that only the services one touches what multi-cluster
// services need, and that neither reads Secrets. key is group/resource,
// with ":names" when limited to those names.
func TestRulesAreLeastPrivileged(t *testing.T) {
	manage := []string{"get", "list", "watch", "create", "update", "delete"}
	for _, tc := range []struct {
		name  string
		rules []rbacv1.PolicyRule
		want  map[string][]string
	}{
		{"base", BaseRules(), map[string][]string{
			"/nodes":                  {"get", "list", "watch"},
			"/namespaces:kube-system": {"get"},
			"kilo.squat.ai/peers":     {"get", "list", "watch", "create", "update", "patch", "delete"},
		}},
		{"services", ServicesRules(), map[string][]string{
			"/namespaces":                                 {"list", "watch"},
			"/services":                                   manage,
			"discovery.k8s.io/endpointslices":             manage,
			"multicluster.x-k8s.io/serviceexports":        {"list", "watch"},
			"multicluster.x-k8s.io/serviceexports/status": {"update"},
			"multicluster.x-k8s.io/serviceimports":        manage,
			"multicluster.x-k8s.io/serviceimports/status": {"update"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string][]string{}
			for _, r := range tc.rules {
				if slices.Contains(r.Verbs, rbacv1.VerbAll) || slices.Contains(r.Resources, rbacv1.ResourceAll) || slices.Contains(r.APIGroups, rbacv1.APIGroupAll) {
					t.Errorf("wildcard in rule %+v", r)
				}
				if len(r.NonResourceURLs) > 0 {
					t.Errorf("rule %+v: want resources, no URLs", r)
				}
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						key := g + "/" + res
						if len(r.ResourceNames) > 0 {
							key += ":" + strings.Join(r.ResourceNames, ",")
						}
						if _, dup := got[key]; dup {
							t.Errorf("%s in two rules", key)
						}
						got[key] = r.Verbs
					}
				}
			}
			for key, verbs := range tc.want {
				if !slices.Equal(got[key], verbs) {
					t.Errorf("%s: verbs %v, want %v", key, got[key], verbs)
				}
			}
			for key := range got {
				if _, ok := tc.want[key]; !ok {
					t.Errorf("unexpected resource %q in the %s role", key, tc.name)
				}
			}
		})
	}
}

// One ServiceAccount, two roles: the services binding names the same
// subject as the base one, and neither role is named for the other.
func TestServicesObjects(t *testing.T) {
	base, services := Objects(), ServicesObjects()
	baseBinding := base[3].(*rbacv1.ClusterRoleBinding)
	role, ok := services[0].(*rbacv1.ClusterRole)
	binding, ok2 := services[1].(*rbacv1.ClusterRoleBinding)
	if !ok || !ok2 || len(services) != 2 {
		t.Fatalf("services objects %T, want a ClusterRole and its binding", services)
	}
	if role.Name != ServicesClusterRole || binding.RoleRef.Name != ServicesClusterRole || binding.Name != ServicesClusterRoleBinding {
		t.Errorf("services role %s bound by %s to %s", role.Name, binding.Name, binding.RoleRef.Name)
	}
	if !reflect.DeepEqual(binding.Subjects, baseBinding.Subjects) {
		t.Errorf("services binding subjects %+v, want the identity's %+v", binding.Subjects, baseBinding.Subjects)
	}
}

func TestUsername(t *testing.T) {
	if got, want := Username(), "system:serviceaccount:kilo-mesh-member:kilo-mesh-member"; got != want {
		t.Errorf("Username() = %q, want %q", got, want)
	}
}

// make verify checks these too; the test says so sooner.
func TestManifestsAreCurrent(t *testing.T) {
	for _, tc := range []struct {
		path   string
		render func() ([]byte, error)
	}{
		{"../../artifacts/member/rbac.yaml", Manifest},
		{"../../artifacts/charts/kilo-mesh-member/templates/identity.yaml", Manifest},
		{"../../artifacts/components/member-services/rbac.yaml", ServicesManifest},
		{"../../artifacts/charts/kilo-mesh-member/templates/services.yaml", ChartServicesTemplate},
		{"../../artifacts/components/host-services/rbac.yaml", HostServicesManifest},
		{"../../artifacts/charts/kilo-mesh-apiserver/files/host-services-rules.yaml", HostServicesRulesYAML},
		{"../../artifacts/components/coredns/rbac.yaml", CoreDNSManifest},
		{"../../artifacts/charts/kilo-mesh-member/files/coredns-rules.yaml", CoreDNSRulesYAML},
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

// The CRDs kustomize and the chart install are the mcs-api module's, and
// kustomize lists each of them.
func TestCRDsAreCurrent(t *testing.T) {
	kustomization, err := os.ReadFile("../../artifacts/member/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range CRDs() {
		for _, dir := range []string{"../../artifacts/member/crds", "../../artifacts/charts/kilo-mesh-member/crds"} {
			t.Run(filepath.Join(dir, crd.File), func(t *testing.T) {
				got, err := os.ReadFile(filepath.Join(dir, crd.File))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(crd.YAML) {
					t.Errorf("not the mcs-api module's CRD %s: run 'make generate'", crd.Name)
				}
				if !strings.Contains(string(got), "name: "+crd.Name) {
					t.Errorf("does not define %s", crd.Name)
				}
			})
		}
		if !strings.Contains(string(kustomization), "- crds/"+crd.File+"\n") {
			t.Errorf("artifacts/member/kustomization.yaml does not list crds/%s", crd.File)
		}
	}
}
