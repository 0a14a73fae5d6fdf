//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestServices: multi-cluster services on real kube-apiservers, each with
// its controller manager (whose endpointslice controller makes the
// exporting cluster's slices from Pods), and the real binary.
func TestServices(t *testing.T) {
	s := startServicesEnv(t)
	t.Run("a ClusterSetIP export is imported everywhere the namespace exists", s.testClusterSetIP)
	t.Run("a headless export is imported without IP", s.testHeadless)
	t.Run("an import carries the Service's IP families, ports, affinity and policies", s.testProperties)
	t.Run("a label or annotation the export drops leaves the import", s.testExportedMetadata)
	t.Run("another writer's finalizers, annotations and owners stay", s.testOtherWriters)
	t.Run("conflicting exports are resolved by age", s.testConflict)
	t.Run("an ExternalName Service is refused", s.testExternalName)
	t.Run("an endpoint outside the podCIDRs is never written", s.testOutsidePodCIDRs)
	t.Run("a user's ServiceImport is left alone", s.testUserImport)
	t.Run("a user's Service at the derived name is left alone", s.testDerivedNameTaken)
	t.Run("a cluster shared with another tenant's services mesh is reported and clears", s.testSharedCluster)
	t.Run("a member without its services rights is left alone", s.testBaseOnlyMember)
	t.Run("services Disabled removes the mesh's imports from every member", s.testDisabledRemoves)
	t.Run("a cluster that leaves the mesh loses its imports, the others keep theirs", s.testLeftRemoves)
	t.Run("a deleted mesh's imports leave every member before it is gone", s.testDeletedRemoves)
	t.Run("a mesh deleted without its finalizer leaves nothing on its members", s.testDeletedWithoutFinalizer)
	t.Run("a mesh deleted while no replica ran leaves nothing on its members", s.testGoneWhileStopped)
	t.Run("a mesh deleted while no replica ran and a member was down leaves nothing once it is back", s.testGoneWhileMemberDown)
	// The attacks come last: they take a member over the server's limits.
	t.Run("a giant EndpointSlice takes nothing over", s.testGiantSlice)
	t.Run("an export flood takes nothing over", s.testExportFlood)
}

func (s *svcEnv) testClusterSetIP(t *testing.T) {
	ns := s.namespace(t, 1, 2)
	onlyOne := s.namespace(t, 1)
	s.backend(t, 1, ns, "cart", []string{"10.11.1.10", "10.11.1.11"}, nil)
	s.backend(t, 1, onlyOne, "cart", []string{"10.11.1.12"}, nil)
	s.export(t, 1, ns, "cart")
	s.export(t, 1, onlyOne, "cart")
	for _, cluster := range []int{1, 2} {
		took := framework.EventuallyT(t, svcConverge, fmt.Sprintf("import in cluster %d", cluster), func() error {
			imp, err := s.imported(cluster, ns, "cart")
			switch {
			case err != nil:
				return err
			case imp.si.Spec.Type != mcsv1beta1.ClusterSetIP || imp.derived == nil:
				return fmt.Errorf("type %s, derived Service %v", imp.si.Spec.Type, imp.derived != nil)
			case len(imp.si.Spec.IPs) != 1 || imp.si.Spec.IPs[0] != imp.derived.Spec.ClusterIP:
				return fmt.Errorf("ips %v, derived Service's clusterIP %s", imp.si.Spec.IPs, imp.derived.Spec.ClusterIP)
			case len(imp.si.Spec.Ports) != 1 || imp.si.Spec.Ports[0].Port != 80:
				return fmt.Errorf("ports %+v", imp.si.Spec.Ports)
			case len(imp.si.Status.Clusters) != 1 || imp.si.Status.Clusters[0].Cluster != "one":
				return fmt.Errorf("status.clusters %+v", imp.si.Status.Clusters)
			case !meta.IsStatusConditionTrue(imp.si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady)):
				// The pass that sets the IPs writes Ready next: the check at rest
				// below must not start between the two.
				return fmt.Errorf("conditions %+v", imp.si.Status.Conditions)
			}
			got := imp.endpoints()
			slices.Sort(got)
			if !slices.Equal(got, []string{"10.11.1.10", "10.11.1.11"}) {
				return fmt.Errorf("endpoints %v", got)
			}
			if refs := imp.derived.OwnerReferences; len(refs) != 1 || refs[0].UID != imp.si.UID || refs[0].Kind != "ServiceImport" {
				return fmt.Errorf("derived Service owners %+v, want the ServiceImport %s", refs, imp.si.UID)
			}
			if imp.derived.Name != services.DerivedServiceName(ns, "cart") || len(imp.derived.Spec.Selector) != 0 {
				return fmt.Errorf("derived Service %s selector %v", imp.derived.Name, imp.derived.Spec.Selector)
			}
			return nil
		})
		t.Logf("cluster %d imported %s/cart %s after the export", cluster, ns, took.Round(time.Millisecond))
	}
	framework.EventuallyT(t, svcConverge, "export conditions", func() error {
		for _, c := range []struct {
			typ    mcsv1beta1.ServiceExportConditionType
			status metav1.ConditionStatus
			reason mcsv1beta1.ServiceExportConditionReason
		}{{mcsv1beta1.ServiceExportConditionValid, metav1.ConditionTrue, mcsv1beta1.ServiceExportReasonValid},
			{mcsv1beta1.ServiceExportConditionReady, metav1.ConditionTrue, mcsv1beta1.ServiceExportReasonExported},
			{mcsv1beta1.ServiceExportConditionConflict, metav1.ConditionFalse, mcsv1beta1.ServiceExportReasonNoConflicts}} {
			if err := s.exportCondition(1, ns, "cart", c.typ, c.status, string(c.reason)); err != nil {
				return err
			}
		}
		return nil
	})
	// The namespace is never created where it does not exist.
	s.waitImported(t, 1, onlyOne, "cart")
	if _, err := s.kube(2).CoreV1().Namespaces().Get(context.Background(), onlyOne, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s was created in cluster 2", onlyOne)
	}

	// At rest, nothing is written again.
	before, err := s.imported(2, ns, "cart")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	after, err := s.imported(2, ns, "cart")
	if err != nil {
		t.Fatal(err)
	}
	if versions(before) != versions(after) {
		t.Errorf("objects rewritten at rest: %s, then %s", versions(before), versions(after))
	}

	// A new Pod of the exporter reaches the import everywhere.
	s.readyPod(t, 1, ns, "cart", "cart-new", "10.11.1.13")
	took := framework.EventuallyT(t, svcConverge, "the new endpoint imported in cluster 2", func() error {
		imp, err := s.imported(2, ns, "cart")
		if err != nil {
			return err
		}
		if got := imp.endpoints(); !slices.Contains(got, "10.11.1.13") {
			return fmt.Errorf("endpoints %v", got)
		}
		return nil
	})
	t.Logf("a new endpoint reached cluster 2 %s after its Pod was Ready (through cluster 1's endpointslice controller)", took.Round(time.Millisecond))

	// An exporter that stops answering keeps its endpoints where they are
	// imported: nothing is removed on a guess.
	if err := s.env.StopCluster(1); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			if err := s.env.StartCluster(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
		}
	}()
	s.testUnreachableExporter(t, ns)
	stopped = false
	if err := s.env.StartCluster(context.Background(), 1); err != nil {
		t.Fatal(err)
	}

	// Unexporting removes the import everywhere, its derived Service with it.
	if err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Delete(context.Background(), "cart", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, cluster := range []int{1, 2} {
		framework.EventuallyT(t, svcConverge, fmt.Sprintf("import gone from cluster %d", cluster), func() error {
			if err := s.gone(cluster, ns, "cart"); err != nil {
				return err
			}
			if imp, _ := s.imported(cluster, ns, "cart"); imp != nil && len(imp.slices) > 0 {
				return fmt.Errorf("%d slices left", len(imp.slices))
			}
			return nil
		})
	}
}

// versions are the resourceVersions of an import's objects.
func versions(i *imported) string {
	v := i.si.ResourceVersion
	if i.derived != nil {
		v += "/" + i.derived.ResourceVersion
	}
	for _, es := range i.slices {
		v += "/" + es.ResourceVersion
	}
	return v
}

func (s *svcEnv) testHeadless(t *testing.T) {
	ns := s.namespace(t, 1, 2)
	s.backend(t, 2, ns, "db", []string{"10.12.1.20"}, func(svc *corev1.Service) { svc.Spec.ClusterIP = corev1.ClusterIPNone })
	s.export(t, 2, ns, "db")
	framework.EventuallyT(t, svcConverge, "headless import in cluster 1", func() error {
		imp, err := s.imported(1, ns, "db")
		switch {
		case err != nil:
			return err
		case imp.si.Spec.Type != mcsv1beta1.Headless || len(imp.si.Spec.IPs) != 0 || imp.derived != nil:
			return fmt.Errorf("type %s, ips %v, derived %v", imp.si.Spec.Type, imp.si.Spec.IPs, imp.derived != nil)
		case !slices.Equal(imp.endpoints(), []string{"10.12.1.20"}):
			return fmt.Errorf("endpoints %v", imp.endpoints())
		}
		return nil
	})
	s.testServiceDeleted(t, 2, 1, ns, "db")
}

func (s *svcEnv) testConflict(t *testing.T) {
	ns := s.namespace(t, 1, 2)
	s.backend(t, 1, ns, "api", []string{"10.11.1.30"}, nil)
	s.export(t, 1, ns, "api")
	s.waitImported(t, 2, ns, "api")
	// The younger export differs in type and in the number of port http,
	// and adds a port metrics: the import has the oldest export's type and
	// http, and the union of the ports.
	time.Sleep(1100 * time.Millisecond) // creation times have a second's resolution
	s.backend(t, 2, ns, "api", []string{"10.12.1.30"}, func(svc *corev1.Service) {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		svc.Spec.Ports[0].Port = 8080
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP})
	})
	s.export(t, 2, ns, "api")
	wantPorts := []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}, {Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090}}
	framework.EventuallyT(t, svcConverge, "conflict on both exports, the oldest wins", func() error {
		for _, cluster := range []int{1, 2} {
			reason := string(mcsv1beta1.ServiceExportReasonPortConflict) + "," + string(mcsv1beta1.ServiceExportReasonTypeConflict)
			if err := s.exportCondition(cluster, ns, "api", mcsv1beta1.ServiceExportConditionConflict, metav1.ConditionTrue, reason); err != nil {
				return err
			}
			imp, err := s.imported(cluster, ns, "api")
			if err != nil {
				return err
			}
			got := imp.endpoints()
			slices.Sort(got)
			switch {
			case imp.si.Spec.Type != mcsv1beta1.ClusterSetIP || imp.derived == nil:
				return fmt.Errorf("cluster %d: type %s, want the oldest export's ClusterSetIP", cluster, imp.si.Spec.Type)
			case !slices.Equal(imp.si.Spec.Ports, wantPorts):
				return fmt.Errorf("cluster %d: ports %+v, want the oldest's http and the union %+v", cluster, imp.si.Spec.Ports, wantPorts)
			case len(imp.si.Status.Clusters) != 2:
				return fmt.Errorf("cluster %d: status.clusters %+v, want both exporters", cluster, imp.si.Status.Clusters)
			case !slices.Equal(got, []string{"10.11.1.30", "10.12.1.30"}):
				return fmt.Errorf("cluster %d: endpoints %v, want both exporters'", cluster, got)
			}
		}
		return nil
	})
	// The oldest export going, the younger decides.
	if err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Delete(context.Background(), "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, svcConverge, "the younger export alone decides", func() error {
		if err := s.exportCondition(2, ns, "api", mcsv1beta1.ServiceExportConditionConflict, metav1.ConditionFalse, string(mcsv1beta1.ServiceExportReasonNoConflicts)); err != nil {
			return err
		}
		imp, err := s.imported(1, ns, "api")
		switch {
		case err != nil:
			return err
		case imp.si.Spec.Type != mcsv1beta1.Headless || imp.derived != nil || len(imp.si.Spec.Ports) != 2 || imp.si.Spec.Ports[0].Port != 8080:
			return fmt.Errorf("type %s, ports %+v, derived %v; want the younger export's", imp.si.Spec.Type, imp.si.Spec.Ports, imp.derived != nil)
		}
		return nil
	})
	// The last export going, the import goes everywhere.
	if err := s.mcs(2).MulticlusterV1beta1().ServiceExports(ns).Delete(context.Background(), "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, cluster := range []int{1, 2} {
		framework.EventuallyT(t, svcConverge, fmt.Sprintf("the import gone from cluster %d after the last unexport", cluster), func() error {
			return s.gone(cluster, ns, "api")
		})
	}
}

func (s *svcEnv) testExternalName(t *testing.T) {
	ns := s.namespace(t, 1, 2)
	s.backend(t, 1, ns, "ext", nil, func(svc *corev1.Service) {
		svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}
	})
	s.export(t, 1, ns, "ext")
	framework.EventuallyT(t, svcConverge, "Valid=False InvalidServiceType", func() error {
		return s.exportCondition(1, ns, "ext", mcsv1beta1.ServiceExportConditionValid, metav1.ConditionFalse, string(mcsv1beta1.ServiceExportReasonInvalidServiceType))
	})
	if err := s.gone(2, ns, "ext"); err != nil {
		t.Errorf("an ExternalName export was imported: %v", err)
	}
}

func (s *svcEnv) testOutsidePodCIDRs(t *testing.T) {
	ns := s.namespace(t, 1, 2)
	s.backend(t, 1, ns, "web", []string{"10.11.1.40", "172.16.0.9"}, nil)
	s.export(t, 1, ns, "web")
	// The endpointslice controller may list the Pods one at a time: the
	// export is Ready with 10.11.1.40 alone before the other is left out.
	framework.EventuallyT(t, svcConverge, "only the endpoint inside the podCIDRs, the other said left out", func() error {
		if err := s.exportCondition(1, ns, "web", mcsv1beta1.ServiceExportConditionReady, metav1.ConditionTrue, ""); err != nil {
			return err
		}
		imp, err := s.imported(2, ns, "web")
		if err != nil {
			return err
		}
		if got := imp.endpoints(); !slices.Equal(got, []string{"10.11.1.40"}) {
			return fmt.Errorf("endpoints %v, want only 10.11.1.40", got)
		}
		se, err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(se.Status.Conditions, string(mcsv1beta1.ServiceExportConditionReady)); c == nil || !containsText(c.Message, services.LeftOutOutsidePodCIDRs) {
			return fmt.Errorf("Ready condition %+v does not say an endpoint is %s", c, services.LeftOutOutsidePodCIDRs)
		}
		return nil
	})
}

func (s *svcEnv) testUserImport(t *testing.T) {
	ns := s.namespace(t, 1, 2)
	mine := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "mail", Namespace: ns},
		Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless, Ports: []mcsv1beta1.ServicePort{{Port: 25, Protocol: corev1.ProtocolTCP}}}}
	mine, err := s.mcs(2).MulticlusterV1beta1().ServiceImports(ns).Create(context.Background(), mine, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.backend(t, 1, ns, "mail", []string{"10.11.1.50"}, nil)
	s.export(t, 1, ns, "mail")
	framework.EventuallyT(t, svcConverge, "the export says where it is not imported", func() error {
		if _, err := s.imported(1, ns, "mail"); err != nil {
			return err
		}
		se, err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Get(context.Background(), "mail", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(se.Status.Conditions, string(mcsv1beta1.ServiceExportConditionReady)); c == nil || !containsText(c.Message, services.BlockedImportNotOwned) {
			return fmt.Errorf("Ready condition %+v does not name %s", c, services.BlockedImportNotOwned)
		}
		return nil
	})
	got, err := s.mcs(2).MulticlusterV1beta1().ServiceImports(ns).Get(context.Background(), "mail", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != mine.ResourceVersion {
		t.Errorf("the user's ServiceImport was written: resourceVersion %s, was %s", got.ResourceVersion, mine.ResourceVersion)
	}
}

func containsText(s, sub string) bool { return sub != "" && strings.Contains(s, sub) }
