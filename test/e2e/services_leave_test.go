//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testDisabledRemoves: once svc's services are Disabled, its ServiceImports,
// derived Services and EndpointSlices leave both members (they routed to
// endpoints of the other cluster), while a user's own ServiceImport and a
// Service carrying only some of the mesh's labels stay untouched. Enabled
// again, the import comes back.
func (s *svcEnv) testDisabledRemoves(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, 1, 2)
	derived := s.exportedToBoth(t, ns, "till", "10.11.1.70")
	m, err := s.mesh()
	if err != nil {
		t.Fatal(err)
	}
	mine := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns},
		Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless, Ports: []mcsv1beta1.ServicePort{{Port: 25, Protocol: corev1.ProtocolTCP}}}}
	if mine, err = s.mcs(2).MulticlusterV1beta1().ServiceImports(ns).Create(ctx, mine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The mesh's UID, but another mesh's name: not the mesh's.
	forged := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: ns, Labels: map[string]string{
		planner.LabelMeshUID: string(m.UID), planner.LabelMeshNamespace: m.Namespace, planner.LabelMeshName: "other"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if forged, err = s.kube(2).CoreV1().Services(ns).Create(ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	s.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", s.ns, "patch", "clustermesh", "svc", "--type=merge",
		"-p", `{"spec":{"multiClusterServices":"Disabled"}}`)
	enabled := false
	t.Cleanup(func() {
		if !enabled {
			s.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", s.ns, "patch", "clustermesh", "svc", "--type=merge",
				"-p", `{"spec":{"multiClusterServices":"Enabled"}}`)
		}
	})
	selector := planner.LabelMeshUID + "=" + string(m.UID)
	for _, c := range []int{1, 2} {
		framework.EventuallyT(t, svcConverge, fmt.Sprintf("the mesh's services objects gone from cluster %d", c), func() error {
			if err := s.gone(c, ns, "till"); err != nil {
				return fmt.Errorf("ServiceImport till: %w", err)
			}
			if _, err := s.kube(c).CoreV1().Services(ns).Get(ctx, derived[c], metav1.GetOptions{}); err == nil {
				return fmt.Errorf("derived Service %s still there", derived[c])
			}
			es, err := s.kube(c).DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return err
			}
			if len(es.Items) > 0 {
				return fmt.Errorf("%d EndpointSlices of the mesh still there", len(es.Items))
			}
			return nil
		})
	}
	s.wantExclusive(t, s.ns, "svc", meshv1alpha1.ConditionServicesExclusive+" True with reason ServicesDisabled once clean", func(m *meshv1alpha1.ClusterMesh) bool {
		c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionServicesExclusive)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "ServicesDisabled"
	})
	if got, err := s.mcs(2).MulticlusterV1beta1().ServiceImports(ns).Get(ctx, "mine", metav1.GetOptions{}); err != nil || got.ResourceVersion != mine.ResourceVersion {
		t.Errorf("the user's ServiceImport was touched: %v", err)
	}
	if got, err := s.kube(2).CoreV1().Services(ns).Get(ctx, "forged", metav1.GetOptions{}); err != nil || got.ResourceVersion != forged.ResourceVersion {
		t.Errorf("a Service with only some of the mesh's labels was touched: %v", err)
	}
	if got, err := s.kube(1).CoreV1().Services(ns).Get(ctx, "till", metav1.GetOptions{}); err != nil || got.Labels[planner.LabelMeshUID] != "" {
		t.Errorf("the exported Service was touched: %v", err)
	}

	// Enabled again, the import comes back.
	s.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", s.ns, "patch", "clustermesh", "svc", "--type=merge",
		"-p", `{"spec":{"multiClusterServices":"Enabled"}}`)
	enabled = true
	s.waitImported(t, 2, ns, "till")
	s.unexport(t, 1, ns, "till")
	if name := services.DerivedServiceName(ns, "till"); name != derived[2] {
		t.Errorf("derived Service named %s, want %s", derived[2], name)
	}
}

// testLeftRemoves: cluster two removed from svc (a third entry, whose
// Secret does not exist, keeps the mesh at two entries), the departure
// removes the mesh's import, derived Service and slices from two through
// its held connection before it completes, while one keeps the import of
// its own export; two rejoins after.
func (s *svcEnv) testLeftRemoves(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, 1, 2)
	derived := s.exportedToBoth(t, ns, "stall", "10.11.1.90")
	kept, err := s.mcs(1).MulticlusterV1beta1().ServiceImports(ns).Get(ctx, "stall", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.patchEntries(t, `{"op":"add","path":"/spec/clusters/-","value":{"name":"ghost","kubeconfigSecretRef":{"name":"ghost-kubeconfig"},"podCIDRs":["10.13.0.0/16"],"wireguardCIDR":"10.43.0.0/16"}}`)
	m := s.patchEntries(t, `{"op":"remove","path":"/spec/clusters/%d"}`, "two")
	t.Cleanup(func() {
		s.patchEntries(t, `{"op":"add","path":"/spec/clusters/-","value":{"name":"two","kubeconfigSecretRef":{"name":"two-kubeconfig"},"podCIDRs":["10.12.0.0/16"],"wireguardCIDR":"10.42.0.0/16"}}`)
		s.patchEntries(t, `{"op":"remove","path":"/spec/clusters/%d"}`, "ghost")
		s.waitImported(t, 2, ns, "stall")
		s.unexport(t, 1, ns, "stall")
	})
	s.logOnFailure(t, "Holding a member connection", "Removed what a mesh wrote", "Listing what a mesh wrote", "Member cluster")
	selector := planner.LabelMeshUID + "=" + string(m.UID)
	framework.EventuallyT(t, svcConverge, "the mesh's services objects gone from cluster 2", func() error {
		if err := s.gone(2, ns, "stall"); err != nil {
			return fmt.Errorf("ServiceImport stall: %w", err)
		}
		if _, err := s.kube(2).CoreV1().Services(ns).Get(ctx, derived[2], metav1.GetOptions{}); err == nil {
			return fmt.Errorf("derived Service %s still there", derived[2])
		}
		es, err := s.kube(2).DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(es.Items) > 0 {
			return fmt.Errorf("%d EndpointSlices of the mesh still there", len(es.Items))
		}
		return nil
	})
	s.wantExclusive(t, s.ns, "svc", "the departure of two complete", func(m *meshv1alpha1.ClusterMesh) bool {
		return len(m.Status.DepartedClusters) == 0 && meta.IsStatusConditionTrue(m.Status.Conditions, meshv1alpha1.ConditionDeparturesComplete)
	})
	if got, err := s.mcs(1).MulticlusterV1beta1().ServiceImports(ns).Get(ctx, "stall", metav1.GetOptions{}); err != nil || got.UID != kept.UID {
		t.Errorf("cluster 1 lost the import of its own export: %v", err)
	}
}

// patchEntries applies one JSON patch operation to svc's entries; with an
// entry name, the operation's %d is that entry's index. It returns the
// mesh as read before the patch.
func (s *svcEnv) patchEntries(t *testing.T, op string, entry ...string) *meshv1alpha1.ClusterMesh {
	t.Helper()
	m, err := s.mesh()
	if err != nil {
		t.Fatal(err)
	}
	if len(entry) == 1 {
		i := slices.IndexFunc(m.Spec.Clusters, func(e meshv1alpha1.ClusterEntry) bool { return e.Name == entry[0] })
		if i < 0 {
			t.Fatalf("svc has no entry %s: %+v", entry[0], m.Spec.Clusters)
		}
		op = fmt.Sprintf(op, i)
	}
	s.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", s.ns, "patch", "clustermesh", "svc", "--type=json", "-p", "["+op+"]")
	return m
}

// testDeletedRemoves: svc deleted, its imports leave both members before
// the mesh is gone (its finalizer waits for them, as for Peers); svc is
// then created again, and imports the export anew.
func (s *svcEnv) testDeletedRemoves(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, 1, 2)
	derived := s.exportedToBoth(t, ns, "ledger", "10.11.1.80")
	m, err := s.mesh()
	if err != nil {
		t.Fatal(err)
	}
	s.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", s.ns, "delete", "clustermesh", "svc", "--wait=false")
	s.awaitMeshGone(t)
	// Read right after: the finalizer was released only once they were gone.
	selector := planner.LabelMeshUID + "=" + string(m.UID)
	for _, c := range []int{1, 2} {
		if err := s.gone(c, ns, "ledger"); err != nil {
			t.Errorf("cluster %d: ServiceImport ledger after the mesh's deletion: %v", c, err)
		}
		if _, err := s.kube(c).CoreV1().Services(ns).Get(ctx, derived[c], metav1.GetOptions{}); err == nil {
			t.Errorf("cluster %d: derived Service %s still there after the mesh's deletion", c, derived[c])
		}
		es, err := s.kube(c).DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		if len(es.Items) > 0 {
			t.Errorf("cluster %d: %d EndpointSlices of the deleted mesh still there", c, len(es.Items))
		}
	}
	s.env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, svcMesh, "-n", s.ns, "create", "-f", "-")
	s.waitImported(t, 2, ns, "ledger")
	s.unexport(t, 1, ns, "ledger")
}

// exportedToBoth exports ns/name from cluster 1 with one endpoint at ip and
// waits for its import, derived Service and slices in clusters 1 and 2; it
// returns the derived Services' names by cluster.
func (s *svcEnv) exportedToBoth(t *testing.T, ns, name, ip string) [3]string {
	t.Helper()
	s.backend(t, 1, ns, name, []string{ip}, nil)
	s.export(t, 1, ns, name)
	var derived [3]string
	for _, c := range []int{1, 2} {
		framework.EventuallyT(t, svcConverge, fmt.Sprintf("import of %s/%s with its slices in cluster %d", ns, name, c), func() error {
			imp, err := s.imported(c, ns, name)
			switch {
			case err != nil:
				return err
			case imp.derived == nil || len(imp.endpoints()) == 0:
				return fmt.Errorf("derived Service %v, endpoints %v", imp.derived != nil, imp.endpoints())
			}
			derived[c] = imp.derived.Name
			return nil
		})
	}
	return derived
}

// unexport deletes ServiceExport ns/name of cluster: the attacks that
// follow count the exports against --max-service-exports-per-cluster.
func (s *svcEnv) unexport(t *testing.T, cluster int, ns, name string) {
	t.Helper()
	if err := s.mcs(cluster).MulticlusterV1beta1().ServiceExports(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// disabledRemovesHost: mesh hostsvc's services Disabled, its import in
// namespace own of the host, which only the author's rights let it use,
// goes with its derived Service and slices; the server logs what it did,
// shown when the test fails.
func (s *svcEnv) disabledRemovesHost(t *testing.T, ns, own string) {
	t.Helper()
	s.logOnFailure(t, "Removed what a mesh wrote", "cannot have", "Listing what a mesh wrote")
	m, err := s.meshIn(ns, "hostsvc")
	if err != nil {
		t.Fatal(err)
	}
	s.env.KubectlT(t, framework.HostCluster, framework.UserTenantA, "-n", ns, "patch", "clustermesh", "hostsvc", "--type=merge",
		"-p", `{"spec":{"multiClusterServices":"Disabled"}}`)
	framework.EventuallyT(t, svcConverge, "the mesh's import, derived Service and slices gone from the host's namespace the author's rights allowed", func() error {
		if err := s.gone(framework.HostCluster, own, "api"); err != nil {
			return fmt.Errorf("ServiceImport api: %w", err)
		}
		return s.leftNothing(framework.HostCluster, m.UID, false)
	})
	s.wantExclusive(t, ns, "hostsvc", meshv1alpha1.ConditionServicesExclusive+" True with reason ServicesDisabled once clean", func(m *meshv1alpha1.ClusterMesh) bool {
		c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionServicesExclusive)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "ServicesDisabled"
	})
}

// logOnFailure logs, once t has failed, the server's log lines holding any
// of subs: what the server did about the test's objects.
func (s *svcEnv) logOnFailure(t *testing.T, subs ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, l := range strings.Split(s.server.Logs(), "\n") {
			if slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(l, sub) }) {
				t.Log(l)
			}
		}
	})
}
