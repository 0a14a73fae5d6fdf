//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestTenantIsolation: a tenant with edit in its namespace has the whole
// ClusterMesh API there, and nothing in another namespace or cluster-wide.
func TestTenantIsolation(t *testing.T) {
	const tenant = framework.UserTenantA
	own, other := framework.NamespaceTenantA, framework.NamespaceTenantB
	name := framework.UniqueName("mine")
	m := manifest(t, "valid.yaml", name)

	t.Run("own namespace", func(t *testing.T) {
		if _, stderr, err := kubectlIn(t, tenant, m, "-n", own, "create", "-f", "-"); err != nil {
			t.Fatalf("create: %v\n%s", err, stderr)
		}
		kubectl(t, tenant, "-n", own, "get", "cmesh", name)
		kubectl(t, tenant, "-n", own, "get", "cmesh")
		if _, stderr, err := kubectlIn(t, tenant, m, "-n", own, "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("apply: %v\n%s", err, stderr)
		}
		if _, stderr, err := kubectlIn(t, tenant, m, "-n", own, "create", "--dry-run=server", "-f", "-"); err == nil || !strings.Contains(stderr, "AlreadyExists") && !strings.Contains(stderr, "already exists") {
			t.Errorf("dry-run create of an existing mesh: %v %s", err, stderr)
		}
		kubectl(t, tenant, "-n", own, "get", "cmesh", "--watch-only", "--request-timeout=2s")
		// edit does not include writing status: that is the server's.
		stderr := kubectlErr(t, tenant, "-n", own, "patch", "cmesh", name, "--subresource=status", "--type=merge", "-p", `{"status":{"observedGeneration":5}}`)
		if !strings.Contains(stderr, "forbidden") {
			t.Errorf("tenant patched status: %s", stderr)
		}
		kubectl(t, tenant, "-n", own, "delete", "cmesh", name)
	})

	t.Run("other namespace", func(t *testing.T) {
		for _, args := range [][]string{
			{"-n", other, "get", "cmesh"},
			{"-n", other, "get", "cmesh", "anything"},
			{"-n", other, "delete", "cmesh", "anything"},
			{"-n", other, "get", "cmesh", "--watch-only", "--request-timeout=2s"},
		} {
			if stderr := kubectlErr(t, tenant, args...); !strings.Contains(stderr, "forbidden") {
				t.Errorf("kubectl %v: want Forbidden, got %s", args, stderr)
			}
		}
		if _, stderr, err := kubectlIn(t, tenant, m, "-n", other, "create", "-f", "-"); err == nil || !strings.Contains(stderr, "forbidden") {
			t.Errorf("create in %s: want Forbidden, got %v %s", other, err, stderr)
		}
	})

	t.Run("cluster-wide", func(t *testing.T) {
		if stderr := kubectlErr(t, tenant, "get", "cmesh", "-A"); !strings.Contains(stderr, "forbidden") {
			t.Errorf("list across namespaces: want Forbidden, got %s", stderr)
		}
	})

	t.Run("viewer reads but cannot write", func(t *testing.T) {
		kubectl(t, framework.UserViewerA, "-n", own, "get", "cmesh")
		if _, stderr, err := kubectlIn(t, framework.UserViewerA, m, "-n", own, "create", "-f", "-"); err == nil || !strings.Contains(stderr, "forbidden") {
			t.Errorf("viewer created a mesh: %v %s", err, stderr)
		}
	})
}
