//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestGrantAPI: grants behave as kubectl users expect of any resource, and
// only cluster administrators see them: a grant names other tenants'
// namespaces.
func TestGrantAPI(t *testing.T) {
	ctx := context.Background()
	name := framework.UniqueName("api")
	spec := framework.TenantGrant("team-x")
	spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kilo-mesh": "allowed"}}
	if err := env.ApplyGrant(ctx, name, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.DeleteGrant(ctx, name) })

	t.Run("discovery and explain", func(t *testing.T) {
		// Also refreshes kubectl's discovery cache, which explain does not.
		var row string
		for _, line := range strings.Split(kubectl(t, admin, "api-resources", "--api-group=mesh.kilo.squat.ai"), "\n") {
			if strings.HasPrefix(line, "clustermeshgrants ") {
				row = strings.Join(strings.Fields(line), " ")
			}
		}
		if row != "clustermeshgrants cmgrant mesh.kilo.squat.ai/v1alpha1 false ClusterMeshGrant" {
			t.Errorf("api-resources: %q", row)
		}
		// The aggregator loads the server's OpenAPI v3 document a while
		// after the APIService becomes available.
		var out string
		framework.EventuallyT(t, time.Minute, "kubectl explain", func() error {
			var stderr string
			var err error
			if out, stderr, err = env.Kubectl(ctx, framework.HostCluster, admin, "explain", "clustermeshgrant.spec"); err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		})
		for _, want := range []string{"memberNetworks", "localNetworks", "memberServers", "namespaceSelector", "namespaces", "Several grants covering one namespace"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("table", func(t *testing.T) {
		out := kubectl(t, admin, "get", "cmgrant", name)
		if header := strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "); header != "NAME NAMESPACES MEMBER NETWORKS LOCAL NETWORKS AGE" {
			t.Errorf("header %q\n%s", header, out)
		}
		if !strings.Contains(out, "team-x + kilo-mesh=allowed") || !strings.Contains(out, "10.0.0.0/8,192.168.0.0/16,fd00::/8") {
			t.Errorf("row:\n%s", out)
		}
		if wide := kubectl(t, admin, "get", "clustermeshgrants", name, "-o", "wide"); !strings.Contains(wide, "MEMBER SERVERS") || !strings.Contains(wide, "127.0.0.0/8") || !strings.Contains(wide, "HOST PEERS") {
			t.Errorf("wide:\n%s", wide)
		}
	})
	t.Run("invalid grants name every field", func(t *testing.T) {
		bad := `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMeshGrant
metadata: {name: ` + name + `-bad}
spec:
  memberNetworks: ["0.0.0.0/0"]
  localNetworks: ["10.0.0.1/8"]
`
		_, stderr, err := kubectlIn(t, admin, bad, "create", "-f", "-")
		for _, want := range []string{"spec: Required value", `spec.memberNetworks[0]: Invalid value: "0.0.0.0/0"`, `spec.localNetworks[0]: Invalid value: "10.0.0.1/8"`} {
			if err == nil || !strings.Contains(stderr, want) {
				t.Errorf("want %q, got %v: %s", want, err, stderr)
			}
		}
	})
	t.Run("only administrators", func(t *testing.T) {
		for _, user := range []string{framework.UserTenantA, framework.UserViewerA} {
			for _, args := range [][]string{{"get", "cmgrant"}, {"get", "cmgrant", name}, {"delete", "cmgrant", name}} {
				if stderr := kubectlErr(t, user, args...); !strings.Contains(stderr, "forbidden") {
					t.Errorf("%s: kubectl %v: want Forbidden, got %s", user, args, stderr)
				}
			}
		}
		own := `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMeshGrant
metadata: {name: ` + name + `-mine}
spec: {namespaces: [tenant-a], memberNetworks: ["0.0.0.0/1", "128.0.0.0/1"]}
`
		if _, stderr, err := kubectlIn(t, framework.UserTenantA, own, "create", "-f", "-"); err == nil || !strings.Contains(stderr, "forbidden") {
			t.Errorf("a tenant granted itself: %v: %s", err, stderr)
		}
		// The shipped reader role, bound on purpose, reads and writes nothing.
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kilo-mesh:grant-reader"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: framework.UserViewerA}}}
		if _, err := env.Client(framework.HostCluster, admin).RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client(framework.HostCluster, admin).RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		})
		// The delegated authorizer caches a refusal for 10 s.
		framework.EventuallyT(t, 30*time.Second, "the grant reader reads grants", func() error {
			_, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserViewerA, "get", "cmgrant", name)
			if err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		})
		if stderr := kubectlErr(t, framework.UserViewerA, "delete", "cmgrant", name); !strings.Contains(stderr, "forbidden") {
			t.Errorf("the grant reader deleted a grant: %s", stderr)
		}
	})
}
