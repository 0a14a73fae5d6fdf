//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

func testAdmission(t *testing.T, v *viewsEnv) {
	ctx := context.Background()
	admin := v.env.Client(framework.HostCluster, framework.UserAdmin)
	// mesh-editor may edit meshes in tenant-a but not read its Secrets.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "mesh-editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"mesh.kilo.squat.ai"}, Resources: []string{"clustermeshes"}, Verbs: []string{"*"},
	}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := v.env.GrantNamespaceRole(ctx, framework.HostCluster, v.ns, "mesh-editor", "mesh-editor"); err != nil {
		t.Fatal(err)
	}
	// GrantNamespaceRole cannot probe a role it does not know: until the
	// binding is in kube-apiserver's RBAC cache, a create is refused by RBAC,
	// not by the admission check under test.
	framework.EventuallyT(t, viewsSettle, "mesh-editor allowed to create meshes", func() error {
		ok, err := v.env.Can(ctx, framework.HostCluster, "mesh-editor", authorizationv1.ResourceAttributes{
			Namespace: v.ns, Verb: "create", Group: "mesh.kilo.squat.ai", Resource: "clustermeshes"})
		if err == nil && !ok {
			err = fmt.Errorf("not yet")
		}
		return err
	})
	borrowed := strings.Replace(viewsMesh, "name: views", "name: borrowed", 1)
	borrowed = strings.NewReplacer("10.42.", "10.142.", "10.4.", "10.14.", "10.52.", "10.152.", "10.53.", "10.153.", "10.5.", "10.15.",
		"10.62.", "10.162.", "10.6.", "10.16.", "192.168.0.", "192.168.100.", "192.168.1.", "192.168.101.", "192.168.2.", "192.168.102.").Replace(borrowed)

	t.Run("nobody borrows credentials they cannot read", func(t *testing.T) {
		_, stderr, err := v.env.KubectlWithInput(ctx, strings.NewReader(borrowed), framework.HostCluster, "mesh-editor", "-n", v.ns, "create", "-f", "-")
		if err == nil || !strings.Contains(stderr, "forbidden") || !strings.Contains(stderr, "spec.clusters[1].kubeconfigSecretRef.name") ||
			!strings.Contains(stderr, `Secret "west-kubeconfig"`) {
			t.Fatalf("want Forbidden naming the Secret, got %v: %s", err, stderr)
		}
		// tenant-a, who can read the Secrets, may.
		v.kubectlIn(t, framework.UserTenantA, borrowed, "create", "--dry-run=server", "-f", "-")
	})

	t.Run("a Secret typo is answered at its field", func(t *testing.T) { testSecretTypos(t, v) })
	t.Run("one cluster listed twice is refused", func(t *testing.T) {
		twice := strings.Replace(borrowed, "{name: north-kubeconfig}", "{name: west-kubeconfig}", 1)
		_, stderr, err := v.env.KubectlWithInput(ctx, strings.NewReader(twice), framework.HostCluster, framework.UserTenantA, "-n", v.ns, "create", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(stderr, "spec.clusters[2]") || !strings.Contains(stderr, "reaches the same cluster as spec.clusters[1] (west)") {
			t.Fatalf("want the second entry of one cluster refused, got %v: %s", err, stderr)
		}
	})

	t.Run("allowed CIDRs", func(t *testing.T) {
		outside := strings.Replace(borrowed, `podCIDRs: ["10.162.0.0/16"]`, `podCIDRs: ["172.20.0.0/16"]`, 1)
		_, stderr, err := v.env.KubectlWithInput(ctx, strings.NewReader(outside), framework.HostCluster, framework.UserTenantA, "-n", v.ns, "create", "-f", "-")
		if err == nil || !strings.Contains(stderr, "spec.clusters[2].podCIDRs[0]") || !strings.Contains(stderr, "outside the networks this server allows") {
			t.Fatalf("want a refusal of 172.20.0.0/16, got %v: %s", err, stderr)
		}
	})

	t.Run("no overlap with another tenant's mesh on a shared cluster", func(t *testing.T) {
		// tenant-b's mesh puts Peers on the local cluster too, and claims
		// west's pod network for a cluster of its own (cluster 2).
		if _, err := v.env.CreateKubeconfigSecret(ctx, framework.NamespaceTenantB, "mine", 2, framework.UserAdmin); err != nil {
			t.Fatal(err)
		}
		theirs := `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: other
spec:
  clusters:
  - name: home
    local: true
    podCIDRs: ["10.42.0.0/16"]
    wireguardCIDR: 10.4.0.0/16
  - name: far
    kubeconfigSecretRef: {name: mine}
    podCIDRs: ["10.52.128.0/17"]
    wireguardCIDR: 10.7.0.0/16
`
		_, stderr, err := v.env.KubectlWithInput(ctx, strings.NewReader(theirs), framework.HostCluster, framework.UserTenantB, "-n", framework.NamespaceTenantB, "create", "-f", "-")
		if err == nil || !strings.Contains(stderr, "spec.clusters[1].podCIDRs[0]") || !strings.Contains(stderr, "another ClusterMesh") {
			t.Fatalf("want an overlap refusal, got %v: %s", err, stderr)
		}
		for _, secret := range []string{v.ns, "views", "west", "10.52.0.0/16"} {
			if strings.Contains(stderr, secret) {
				t.Errorf("the refusal reveals %q of another tenant: %s", secret, stderr)
			}
		}
		// The local cluster's own networks, declared alike, are no conflict.
		fine := strings.Replace(theirs, "10.52.128.0/17", "10.72.0.0/16", 1)
		if _, stderr, err := v.env.KubectlWithInput(ctx, strings.NewReader(fine), framework.HostCluster, framework.UserTenantB, "-n", framework.NamespaceTenantB, "create", "-f", "-"); err != nil {
			t.Fatalf("a disjoint mesh was refused: %v: %s", err, stderr)
		}
	})

	// Uses tenant-b's mesh "other" that the subtest above leaves, sharing
	// the local cluster with this tenant's mesh.
	t.Run("a cluster belongs to at most one mesh with services enabled", func(t *testing.T) { testOneClusterSet(t, v) })
}

// testOneClusterSet: once another tenant's mesh has services enabled on
// the shared local cluster, enabling them here is refused at the field,
// without a word of the other tenant's mesh.
func testOneClusterSet(t *testing.T, v *viewsEnv) {
	ctx := context.Background()
	patch := func(services string) string {
		return `{"spec":{"multiClusterServices":"` + services + `"}}`
	}
	v.env.KubectlT(t, framework.HostCluster, framework.UserTenantB, "-n", framework.NamespaceTenantB, "patch", "clustermesh", "other", "--type=merge", "-p", patch("Enabled"))
	t.Cleanup(func() {
		v.env.KubectlT(t, framework.HostCluster, framework.UserTenantB, "-n", framework.NamespaceTenantB, "patch", "clustermesh", "other", "--type=merge", "-p", patch("Disabled"))
	})
	// The other mesh's local entry counts once its member caches verified it.
	var stderr string
	framework.EventuallyT(t, viewsSettle, "the second mesh with services on the local cluster refused", func() error {
		var err error
		_, stderr, err = v.env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "-n", v.ns, "patch", "clustermesh", "views",
			"--type=merge", "--dry-run=server", "-p", patch("Enabled"))
		if err == nil || !strings.Contains(stderr, "spec.multiClusterServices") || !strings.Contains(stderr, "another ClusterMesh with multiClusterServices Enabled") {
			return fmt.Errorf("want a refusal at spec.multiClusterServices, got %v: %s", err, stderr)
		}
		return nil
	})
	if !strings.Contains(stderr, "is invalid") {
		t.Errorf("want a 422 Invalid, got: %s", stderr)
	}
	for _, secret := range []string{framework.NamespaceTenantB, "other", "home", "far", "mine"} {
		// As words: "another" is not the mesh "other".
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(secret) + `\b`).MatchString(stderr) {
			t.Errorf("the refusal reveals %q of another tenant: %s", secret, stderr)
		}
	}
	// A mesh with services Disabled shares the cluster as before.
	v.env.KubectlT(t, framework.HostCluster, framework.UserTenantA, "-n", v.ns, "patch", "clustermesh", "views", "--type=merge", "--dry-run=server", "-p", patch("Disabled"))
}
