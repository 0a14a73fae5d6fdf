//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestServicesView: the services view of a real server over two member
// clusters whose EndpointSlices their own kube-controller-managers write,
// read as kubectl reads it, and authorized per subresource.
func TestServicesView(t *testing.T) {
	v := startServicesViewEnv(t)

	t.Run("a mesh without services: a clear error", func(t *testing.T) {
		framework.EventuallyT(t, viewsSettle, "the services view refusing a mesh with services disabled", func() error {
			_, err := v.raw(framework.UserViewerA, "services")
			if err == nil || !strings.Contains(err.Error(), "BadRequest") ||
				!strings.Contains(err.Error(), "clustermesh "+v.ns+"/shop does not carry services: its spec.multiClusterServices is not Enabled") {
				return fmt.Errorf("want 400 saying services are not enabled, got %v", err)
			}
			return nil
		})
		_, err := v.kubectl(framework.UserViewerA, "-n", v.ns, "get", "clustermesh", "shop", "--subresource=services")
		if err == nil || !strings.Contains(err.Error(), "does not carry services") {
			t.Errorf("kubectl get --subresource=services of a mesh without services: %v", err)
		}
	})

	if _, err := v.kubectl(framework.UserTenantA, "-n", v.ns, "patch", "clustermesh", "shop", "--type=merge", "-p", `{"spec":{"multiClusterServices":"Enabled"}}`); err != nil {
		t.Fatal(err)
	}

	t.Run("before any export: every cluster, nothing imported", func(t *testing.T) {
		framework.EventuallyT(t, viewsSettle, "both clusters reachable in the services view", func() error {
			s, err := v.services("")
			if err != nil {
				return err
			}
			if len(s.Clusters) != 2 || !s.Clusters[0].Reachable || !s.Clusters[1].Reachable {
				return fmt.Errorf("clusters %+v", s.Clusters)
			}
			if len(s.Exports) != 0 || len(s.Clusters[0].Imports)+len(s.Clusters[1].Imports) != 0 {
				return fmt.Errorf("imports or exports before any export: %+v", s)
			}
			return nil
		})
	})

	v.env.KubectlInT(t, 1, framework.UserAdmin, cartExport, "apply", "-f", "-")

	t.Run("after an export: the import in every cluster, the export's outcome", func(t *testing.T) {
		framework.EventuallyT(t, viewsSettle, "shop/cart imported in west and north", func() error {
			s, err := v.services("")
			if err != nil {
				return err
			}
			for _, cluster := range []string{"west", "north"} {
				imp := importOf(s, cluster)
				if imp == nil {
					return fmt.Errorf("no import of shop/cart in %s: %+v", cluster, s.Clusters)
				}
				if imp.Type != "ClusterSetIP" || !slices.Equal(imp.SourceClusters, []string{"west"}) || imp.Endpoints != 2 || imp.Blocked != "" ||
					!slices.Equal(imp.Ports, []meshv1alpha1.ImportPort{{Name: "http", Protocol: "TCP", Port: 80}}) {
					return fmt.Errorf("import in %s: %+v", cluster, imp)
				}
			}
			want := meshv1alpha1.ExportState{Cluster: "west", Namespace: "shop", Name: "cart", Valid: "Valid", Endpoints: 2,
				LeftOut: []meshv1alpha1.ReasonCount{{Reason: "NotReady", Count: 1}, {Reason: "OutsidePodCIDRs", Count: 1}}}
			if len(s.Exports) != 1 || !exportEqual(s.Exports[0], want) {
				return fmt.Errorf("exports %+v, want [%+v]", s.Exports, want)
			}
			return nil
		})
	})

	t.Run("?cluster= keeps one cluster; a stranger or an unknown parameter is refused", func(t *testing.T) {
		s, err := v.services("?cluster=north")
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Clusters) != 1 || s.Clusters[0].Cluster != "north" || importOf(s, "north") == nil || len(s.Exports) != 0 {
			t.Errorf("services of north: %+v", s)
		}
		for query, want := range map[string]string{
			"?cluster=nowhere": `cluster "nowhere" is not a member of clustermesh shop`,
			"?format=dot":      `unknown query parameter "format": the services view takes cluster`,
		} {
			if _, err := v.raw(framework.UserViewerA, "services"+query); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("services%s: want an error with %q, got %v", query, want, err)
			}
		}
	})

	t.Run("kubectl get --subresource=services: a row per import and per export", func(t *testing.T) {
		out, err := v.kubectl(framework.UserViewerA, "-n", v.ns, "get", "clustermesh", "shop", "--subresource=services", "-o", "wide")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl get clustermesh shop --subresource=services -o wide:\n%s", out)
		cols, rows := kubectlTable(t, out)
		want := map[string][]string{
			// CLUSTER/KIND: SERVICE TYPE PORTS SOURCES ENDPOINTS STATUS LEFT OUT REACHABLE
			"west/Import":  {"shop/cart", "ClusterSetIP", "http:80/TCP", "west", "2", "Imported", "<none>", "true"},
			"north/Import": {"shop/cart", "ClusterSetIP", "http:80/TCP", "west", "2", "Imported", "<none>", "true"},
			"west/Export":  {"shop/cart", "<none>", "<none>", "<none>", "2", "Exported", "NotReady=1,OutsidePodCIDRs=1", "true"},
		}
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d", len(rows), len(want))
		}
		for _, row := range rows {
			key := cell(t, cols, row, "CLUSTER") + "/" + cell(t, cols, row, "KIND")
			got := []string{cell(t, cols, row, "SERVICE"), cell(t, cols, row, "TYPE"), cell(t, cols, row, "PORTS"), cell(t, cols, row, "SOURCES"),
				cell(t, cols, row, "ENDPOINTS"), cell(t, cols, row, "STATUS"), cell(t, cols, row, "LEFT OUT"), cell(t, cols, row, "REACHABLE")}
			if !slices.Equal(got, want[key]) {
				t.Errorf("row %s: %v, want %v", key, got, want[key])
			}
		}
	})

	t.Run("only who may get clustermeshes/services reads it", func(t *testing.T) { testServicesRBAC(t, v) })
}

func exportEqual(a, b meshv1alpha1.ExportState) bool {
	return a.Cluster == b.Cluster && a.Namespace == b.Namespace && a.Name == b.Name && a.Valid == b.Valid &&
		slices.Equal(a.Conflicts, b.Conflicts) && a.Endpoints == b.Endpoints && slices.Equal(a.LeftOut, b.LeftOut) && a.Stale == b.Stale
}

// testServicesRBAC: status-reader may read the mesh and its status, and is
// Forbidden the services view; services-reader is given get on
// clustermeshes/services too, and reads it; viewer-a, of the aggregated
// view role, reads it in its namespace only.
func testServicesRBAC(t *testing.T, v *servicesViewEnv) {
	ctx := context.Background()
	admin := v.env.Client(framework.HostCluster, framework.UserAdmin)
	for user, resources := range map[string][]string{
		"status-reader":   {"clustermeshes", "clustermeshes/status"},
		"services-reader": {"clustermeshes", "clustermeshes/services"},
	} {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: v.ns}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{meshv1alpha1.GroupName}, Resources: resources, Verbs: []string{"get"},
		}}}
		if _, err := admin.RbacV1().Roles(v.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: v.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
		if _, err := admin.RbacV1().RoleBindings(v.ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.EventuallyT(t, viewsSettle, "services-reader reads the services view", func() error {
		out, err := v.raw("services-reader", "services")
		if err == nil && !strings.Contains(out, `"kind":"ClusterMeshServices"`) {
			return fmt.Errorf("not a services view: %s", out)
		}
		return err
	})
	framework.EventuallyT(t, viewsSettle, "status-reader reads the status", func() error {
		_, err := v.raw("status-reader", "status")
		return err
	})
	for _, path := range []string{"services", "services?cluster=west"} {
		_, err := v.raw("status-reader", path)
		if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "clustermeshes/services") {
			t.Errorf("status-reader reading %s: want Forbidden on clustermeshes/services, got %v", path, err)
		}
	}
	_, err := v.kubectl(framework.UserViewerA, "get", "--raw", "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"+framework.NamespaceTenantB+"/clustermeshes/shop/services")
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("viewer-a reading the services view in tenant-b: want Forbidden, got %v", err)
	}
}
