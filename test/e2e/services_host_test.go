//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// hostSvcMesh joins the host, where the server writes with its own
// identity, and cluster 1, with services enabled.
const hostSvcMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: hostsvc
spec:
  multiClusterServices: Enabled
  clusters:
  - name: host
    local: true
    podCIDRs: ["10.10.0.0/16"]
    wireguardCIDR: 10.40.0.0/16
  - name: one
    kubeconfigSecretRef: {name: cluster-1-kubeconfig}
    podCIDRs: ["10.11.0.0/16"]
    wireguardCIDR: 10.41.0.0/16
`

// TestServicesHost: on the host the server writes with its own identity,
// so a tenant allowed only in its own namespace there cannot have it
// export from or import into another tenant's namespace through a mesh;
// an administrator's grant naming that namespace allows it.
func TestServicesHost(t *testing.T) {
	ctx := context.Background()
	env := framework.StartT(t, framework.Options{Clusters: 2})
	s := &svcEnv{env: env, server: env.StartMeshServerT(t, framework.MeshServerOptions{ExtraArgs: []string{"-v=2"}})}
	nodeCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	for i := 0; i <= 1; i++ {
		if err := env.InstallMCSCRDs(ctx, i); err != nil {
			t.Fatal(err)
		}
		node := framework.KiloNode{Name: svcNode(i), Location: "a", Endpoint: fmt.Sprintf("203.0.113.%d:51820", i+1),
			InternalIP: fmt.Sprintf("192.168.%d.1/24", i), WireGuardIP: fmt.Sprintf("10.4%d.0.1/16", i), PodCIDR: fmt.Sprintf("10.1%d.1.0/24", i)}
		if _, err := env.CreateKiloNode(ctx, i, node); err != nil {
			t.Fatal(err)
		}
		go s.keepNodeReady(nodeCtx, i)
	}
	// The administrator gives the server the host's services rights the
	// install ships (hostServices.enabled): the defence under test is the
	// server's, not RBAC's.
	if _, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "apply", "-f", "../../artifacts/components/host-services/rbac.yaml"); err != nil {
		t.Fatalf("applying artifacts/components/host-services: %v\n%s", err, stderr)
	}

	// Tenant A: edit in its own namespace of the host, and a grant for
	// its mesh's networks that names no service namespace.
	ns, err := env.NewNamespace(ctx, "hostsvc")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.GrantNamespaceRole(ctx, framework.HostCluster, ns, framework.UserTenantA, "edit"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.CreateKubeconfigSecret(ctx, ns, "cluster-1-kubeconfig", 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	grant := framework.TenantGrant(ns)
	if err := env.ApplyGrant(ctx, ns, grant); err != nil {
		t.Fatal(err)
	}
	env.KubectlInT(t, framework.HostCluster, framework.UserTenantA, hostSvcMesh, "-n", ns, "create", "-f", "-")

	// Another tenant's namespace, on both clusters, exporting on each.
	victim := s.namespace(t, framework.HostCluster, 1)
	s.backend(t, framework.HostCluster, victim, "cart", []string{"10.10.1.10"}, nil)
	s.export(t, framework.HostCluster, victim, "cart")
	s.backend(t, 1, victim, "db", []string{"10.11.1.20"}, nil)
	s.export(t, 1, victim, "db")

	framework.EventuallyT(t, svcConverge, "the host's export refused, cluster 1's imported in cluster 1 only", func() error {
		if err := s.exportCondition(framework.HostCluster, victim, "cart", mcsv1beta1.ServiceExportConditionValid, metav1.ConditionFalse, services.ExportHostNamespaceNotGranted); err != nil {
			return err
		}
		if _, err := s.imported(1, victim, "db"); err != nil {
			return err
		}
		events, err := s.kube(framework.HostCluster).CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + services.BlockedHostNamespaceNotGranted})
		switch {
		case err != nil:
			return err
		case len(events.Items) == 0:
			return errors.New("no HostNamespaceNotGranted event on the mesh")
		case strings.Contains(events.Items[0].Message, victim):
			return fmt.Errorf("the event names the other tenant's namespace: %s", events.Items[0].Message)
		}
		return nil
	})
	// The mesh's readers get a count of the host's hidden exports and
	// imports, never the other tenant's namespace or Service names.
	framework.EventuallyT(t, svcConverge, "the tenant's services view counts the host's hidden services without naming them", func() error {
		return s.hostNamesHidden(t, ns, victim)
	})
	// A few more passes: nothing of either export reaches where it must not.
	time.Sleep(3 * time.Second)
	if err := s.nothingWritten(framework.HostCluster, victim); err != nil {
		t.Errorf("host namespace %s without a grant: %v", victim, err)
	}
	if imp, err := s.imported(1, victim, "cart"); err == nil {
		t.Errorf("the host's export %s/cart was imported in cluster 1: %v", victim, imp.endpoints())
	}

	// An administrator names the namespace: both directions work.
	grant.ServiceNamespaces = []string{victim}
	if err := env.ApplyGrant(ctx, ns, grant); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, svcConverge, "imports both ways once granted", func() error {
		for _, c := range []struct {
			cluster  int
			name, ip string
		}{{framework.HostCluster, "db", "10.11.1.20"}, {1, "cart", "10.10.1.10"}} {
			imp, err := s.imported(c.cluster, victim, c.name)
			if err != nil {
				return fmt.Errorf("cluster %d: %w", c.cluster, err)
			}
			if !slices.Equal(imp.endpoints(), []string{c.ip}) || imp.derived == nil {
				return fmt.Errorf("cluster %d %s: endpoints %v, derived Service %v", c.cluster, c.name, imp.endpoints(), imp.derived != nil)
			}
		}
		return s.exportCondition(framework.HostCluster, victim, "cart", mcsv1beta1.ServiceExportConditionValid, metav1.ConditionTrue, string(mcsv1beta1.ServiceExportReasonValid))
	})

	// Narrowed again: what the mesh wrote there goes, the export is refused.
	grant.ServiceNamespaces = nil
	if err := env.ApplyGrant(ctx, ns, grant); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, svcConverge, "the host's namespace emptied once the grant is narrowed", func() error {
		if err := s.nothingWritten(framework.HostCluster, victim); err != nil {
			return err
		}
		if err := s.hostNamesHidden(t, ns, victim); err != nil {
			return err
		}
		return s.gone(1, victim, "cart")
	})

	// A namespace where the author holds, by hand, every right the server
	// would use there needs no grant: the reviews ask the host's RBAC.
	own := s.namespace(t, framework.HostCluster, 1)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "services-by-hand", Namespace: own}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{"serviceimports"}, Verbs: []string{"create", "get", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create", "get", "update", "delete"}},
		{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}, Verbs: []string{"create", "update", "delete", "get", "list"}},
		{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{"serviceexports/status"}, Verbs: []string{"update"}},
	}}
	if _, err := s.kube(framework.HostCluster).RbacV1().Roles(own).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "services-by-hand", Namespace: own},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: framework.UserTenantA}}}
	if _, err := s.kube(framework.HostCluster).RbacV1().RoleBindings(own).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.backend(t, 1, own, "api", []string{"10.11.1.30"}, nil)
	s.export(t, 1, own, "api")
	framework.EventuallyT(t, svcConverge, "imported into the host where the author may write by hand", func() error {
		imp, err := s.imported(framework.HostCluster, own, "api")
		if err != nil {
			return err
		}
		if !slices.Equal(imp.endpoints(), []string{"10.11.1.30"}) {
			return fmt.Errorf("endpoints %v", imp.endpoints())
		}
		return nil
	})
	// Disabled, the author's record goes with the services (admission),
	// and no grant names own: what the mesh wrote there, known by its
	// labels and UID, goes all the same.
	s.disabledRemovesHost(t, ns, own)
}

// nothingWritten is nil when namespace ns of cluster holds no
// ServiceImport, derived Service or EndpointSlice of an import.
func (s *svcEnv) nothingWritten(cluster int, ns string) error {
	ctx := context.Background()
	var found []string
	imports, err := s.mcs(cluster).MulticlusterV1beta1().ServiceImports(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, si := range imports.Items {
		found = append(found, "ServiceImport "+si.Name)
	}
	svcs, err := s.kube(cluster).CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, svc := range svcs.Items {
		if strings.HasPrefix(svc.Name, "derived-") {
			found = append(found, "Service "+svc.Name)
		}
	}
	owned, err := s.kube(cluster).DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelManagedBy + "=" + services.ManagedByValue})
	if err != nil {
		return err
	}
	for _, es := range owned.Items {
		found = append(found, "EndpointSlice "+es.Name)
	}
	if len(found) > 0 {
		return errors.New("written: " + strings.Join(found, ", "))
	}
	return nil
}

// hostNamesHidden is nil when tenant A's services view of the mesh, raw and
// as a table, counts the export of cart and the import of db in namespace
// victim of the host and names neither: victim and db may appear only as
// cluster one's, whose kubeconfig the tenant gave.
func (s *svcEnv) hostNamesHidden(t *testing.T, ns, victim string) error {
	ctx := context.Background()
	path := "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/" + ns + "/clustermeshes/hostsvc/services"
	hostOnly, stderr, err := s.env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "get", "--raw", path+"?cluster=host")
	if err != nil {
		return fmt.Errorf("the host's services view: %w: %s", err, stderr)
	}
	var v meshv1alpha1.ClusterMeshServices
	if err := json.Unmarshal([]byte(hostOnly), &v); err != nil {
		return fmt.Errorf("the host's services view: %w", err)
	}
	hidden := []meshv1alpha1.ReasonCount{{Reason: services.BlockedHostNamespaceNotGranted, Count: 1}}
	if len(v.Clusters) != 1 || !slices.Equal(v.Clusters[0].HiddenExports, hidden) || !slices.Equal(v.Clusters[0].HiddenImports, hidden) {
		return fmt.Errorf("the host's services view does not count one hidden export and import: %s", hostOnly)
	}
	// The mesh's own namespace is named in the view, and its random suffix may hold "db".
	withoutNs := strings.ReplaceAll(hostOnly, `"namespace":"`+ns+`"`, "")
	for _, name := range []string{victim, "cart", "db"} {
		if strings.Contains(withoutNs, name) {
			t.Errorf("the host's services view names %q: %s", name, hostOnly)
		}
	}
	all, stderr, err := s.env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "get", "--raw", path)
	if err != nil {
		return fmt.Errorf("the services view: %w: %s", err, stderr)
	}
	if strings.Contains(all, "cart") {
		t.Errorf("the services view names the host's Service cart: %s", all)
	}
	v = meshv1alpha1.ClusterMeshServices{}
	if err := json.Unmarshal([]byte(all), &v); err != nil {
		return fmt.Errorf("the services view: %w", err)
	}
	for _, c := range v.Clusters {
		if c.Cluster == "host" && len(c.Imports) != 0 {
			t.Errorf("the services view shows imports of the host: %+v", c.Imports)
		}
	}
	for _, e := range v.Exports {
		if e.Cluster == "host" {
			t.Errorf("the services view shows an export of the host: %+v", e)
		}
	}
	table, stderr, err := s.env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "-n", ns, "get", "clustermesh", "hostsvc", "--subresource=services", "-o", "wide")
	if err != nil {
		return fmt.Errorf("the services table: %w: %s", err, stderr)
	}
	if !strings.Contains(table, services.BlockedHostNamespaceNotGranted) {
		return fmt.Errorf("the services table has no row counting the host's hidden services:\n%s", table)
	}
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(line, "cart") || (strings.Contains(line, victim) && !strings.HasPrefix(line, "one ")) {
			t.Errorf("the services table names the other tenant's host services: %q", line)
		}
	}
	return nil
}
