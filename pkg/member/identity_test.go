package member

import (
	"os"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The identity reads only the kube-system namespace, and writes nothing but
// Peers: a member cluster's admin can read this role and see that.
func TestRulesAreLeastPrivileged(t *testing.T) {
	for _, r := range Rules() {
		for _, res := range r.Resources {
			switch res {
			case "nodes":
				if !slices.Equal(r.Verbs, []string{"get", "list", "watch"}) || len(r.ResourceNames) > 0 {
					t.Errorf("nodes: verbs %v, resourceNames %v; want read-only on all nodes", r.Verbs, r.ResourceNames)
				}
			case "namespaces":
				if !slices.Equal(r.Verbs, []string{"get"}) || !slices.Equal(r.ResourceNames, []string{IdentityNamespace}) {
					t.Errorf("namespaces: verbs %v, resourceNames %v; want get on %s only", r.Verbs, r.ResourceNames, IdentityNamespace)
				}
			case "peers":
				if !slices.Equal(r.APIGroups, []string{"kilo.squat.ai"}) {
					t.Errorf("peers in groups %v", r.APIGroups)
				}
			default:
				t.Errorf("unexpected resource %q in the member role", res)
			}
			if slices.Contains(r.Verbs, rbacv1.VerbAll) || slices.Contains(r.Resources, rbacv1.ResourceAll) {
				t.Errorf("wildcard in rule %+v", r)
			}
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
