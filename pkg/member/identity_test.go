package member

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The identity has exactly these rights: a member cluster's admin can read
// this role and see that it writes nothing but Peers and what multi-cluster
// services need, and reads no Secrets.
func TestRulesAreLeastPrivileged(t *testing.T) {
	read := []string{"get", "list", "watch"}
	manage := []string{"get", "list", "watch", "create", "update", "delete"}
	want := map[string][]string{
		"/nodes":                               read,
		"/namespaces":                          read,
		"kilo.squat.ai/peers":                  {"get", "list", "watch", "create", "update", "patch", "delete"},
		"/services":                            manage,
		"discovery.k8s.io/endpointslices":      manage,
		"multicluster.x-k8s.io/serviceexports": read,
		"multicluster.x-k8s.io/serviceexports/status": {"update"},
		"multicluster.x-k8s.io/serviceimports":        manage,
		"multicluster.x-k8s.io/serviceimports/status": {"update"},
	}
	got := map[string][]string{}
	for _, r := range Rules() {
		if slices.Contains(r.Verbs, rbacv1.VerbAll) || slices.Contains(r.Resources, rbacv1.ResourceAll) || slices.Contains(r.APIGroups, rbacv1.APIGroupAll) {
			t.Errorf("wildcard in rule %+v", r)
		}
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: want whole resources, no names or URLs", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				key := g + "/" + res
				if _, dup := got[key]; dup {
					t.Errorf("%s in two rules", key)
				}
				got[key] = r.Verbs
			}
		}
	}
	for key, verbs := range want {
		t.Run(key, func(t *testing.T) {
			if !slices.Equal(got[key], verbs) {
				t.Errorf("verbs %v, want %v", got[key], verbs)
			}
		})
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("unexpected resource %q in the member role", key)
		}
	}
}

func TestUsername(t *testing.T) {
	if got, want := Username(), "system:serviceaccount:kilo-mesh-member:kilo-mesh-member"; got != want {
		t.Errorf("Username() = %q, want %q", got, want)
	}
}

// make verify checks this too; the test says so sooner.
func TestManifestIsCurrent(t *testing.T) {
	want, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../artifacts/member/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("artifacts/member/rbac.yaml is not what pkg/member defines: run 'make generate'")
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
