//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testProperties: a dual-stack export with two ports, ClientIP affinity,
// a Local internal traffic policy and a traffic distribution is imported
// with all of them, and with one IP per family, in family order, which
// are the derived Service's own.
func (s *svcEnv) testProperties(t *testing.T) {
	ns := s.namespace(t, 1, 2)
	local, sameZone := corev1.ServiceInternalTrafficPolicyLocal, corev1.ServiceTrafficDistributionPreferSameZone
	affinity := &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](300)}}
	s.backend(t, 1, ns, "props", []string{"10.11.1.60"}, func(svc *corev1.Service) {
		svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, AppProtocol: ptr.To("dns")})
		svc.Spec.SessionAffinity, svc.Spec.SessionAffinityConfig = corev1.ServiceAffinityClientIP, affinity
		svc.Spec.InternalTrafficPolicy, svc.Spec.TrafficDistribution = &local, &sameZone
	})
	s.export(t, 1, ns, "props")
	wantPorts := []mcsv1beta1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, AppProtocol: ptr.To("dns"), Port: 53},
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}
	for _, cluster := range []int{1, 2} {
		framework.EventuallyT(t, svcConverge, fmt.Sprintf("the import in cluster %d carries the Service's properties", cluster), func() error {
			imp, err := s.imported(cluster, ns, "props")
			if err != nil {
				return err
			}
			spec, d := imp.si.Spec, imp.derived
			switch {
			case d == nil:
				return errors.New("no derived Service")
			case !slices.Equal(spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}):
				return fmt.Errorf("ipFamilies %v", spec.IPFamilies)
			case len(spec.IPs) != 2 || !slices.Equal(spec.IPs, d.Spec.ClusterIPs) || !is4(spec.IPs[0]) || is4(spec.IPs[1]):
				return fmt.Errorf("ips %v, want one IPv4 then one IPv6, the derived Service's %v", spec.IPs, d.Spec.ClusterIPs)
			case !apiequality.Semantic.DeepEqual(spec.Ports, wantPorts):
				return fmt.Errorf("ports %+v, want %+v", spec.Ports, wantPorts)
			case spec.SessionAffinity != corev1.ServiceAffinityClientIP || !apiequality.Semantic.DeepEqual(spec.SessionAffinityConfig, affinity):
				return fmt.Errorf("session affinity %s %+v", spec.SessionAffinity, spec.SessionAffinityConfig)
			case ptr.Deref(spec.InternalTrafficPolicy, "") != local || ptr.Deref(spec.TrafficDistribution, "") != sameZone:
				return fmt.Errorf("internal traffic policy %v, traffic distribution %v", ptr.Deref(spec.InternalTrafficPolicy, ""), ptr.Deref(spec.TrafficDistribution, ""))
			case d.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || ptr.Deref(d.Spec.InternalTrafficPolicy, "") != local ||
				ptr.Deref(d.Spec.TrafficDistribution, "") != sameZone || len(d.Spec.Ports) != 2:
				return fmt.Errorf("derived Service %+v does not route as the import says", d.Spec)
			case !slices.Equal(imp.endpoints(), []string{"10.11.1.60"}):
				return fmt.Errorf("endpoints %v", imp.endpoints())
			}
			return nil
		})
	}
}

func is4(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.Is4()
}

// testUnreachableExporter runs with cluster 1, which exports ns/cart with 3
// endpoints, stopped: the import in cluster 2 keeps them, its Ready
// condition, the mesh and the view say they are the last known.
func (s *svcEnv) testUnreachableExporter(t *testing.T, ns string) {
	var lost error
	framework.EventuallyT(t, svcConverge, "the import, the mesh and the view saying cluster one is unreachable", func() error {
		imp, err := s.imported(2, ns, "cart")
		if err != nil || len(imp.endpoints()) != 3 {
			lost = fmt.Errorf("with the exporter unreachable, the import in cluster 2 is %v, %v; want its 3 endpoints kept", imp, err)
			return nil
		}
		if c := meta.FindStatusCondition(imp.si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady)); c == nil ||
			!strings.Contains(c.Message, "the endpoints of one are the last known") {
			return fmt.Errorf("the import's Ready condition %+v does not say one's endpoints are the last known", c)
		}
		m, err := s.mesh()
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionClustersReachable); c == nil ||
			c.Reason != reconciler.ReasonUnreachable || !strings.Contains(c.Message, "one") || !strings.Contains(c.Message, "exported services' endpoints where imported") {
			return fmt.Errorf("the mesh's ClustersReachable %+v does not name one and say its endpoints are kept", c)
		}
		v, err := s.view()
		if err != nil {
			return err
		}
		for _, c := range v.Clusters {
			if c.Cluster == "one" && (c.Reachable || c.Reason == "") {
				return fmt.Errorf("the view's cluster one %+v, want unreachable with a reason", c)
			}
		}
		for _, e := range v.Exports {
			if e.Cluster == "one" && e.Namespace == ns && e.Name == "cart" && (!e.Stale || e.Endpoints != 3) {
				return fmt.Errorf("the view's export %+v, want its 3 last known endpoints, stale", e)
			}
		}
		return nil
	})
	if lost != nil {
		t.Fatal(lost)
	}
	for deadline := time.Now().Add(svcHold); time.Now().Before(deadline); time.Sleep(time.Second) {
		imp, err := s.imported(2, ns, "cart")
		if err != nil || len(imp.endpoints()) != 3 {
			t.Fatalf("with the exporter unreachable, the import in cluster 2 is %v, %v; want its 3 endpoints kept", imp, err)
		}
	}
}

// testServiceDeleted: deleting an exported Service is observed, not
// guessed: the export becomes Valid=False NoService and the import goes.
func (s *svcEnv) testServiceDeleted(t *testing.T, cluster, importer int, ns, name string) {
	if err := s.kube(cluster).CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, svcConverge, "Valid=False NoService, and the import gone", func() error {
		if err := s.exportCondition(cluster, ns, name, mcsv1beta1.ServiceExportConditionValid, metav1.ConditionFalse, string(mcsv1beta1.ServiceExportReasonNoService)); err != nil {
			return err
		}
		if err := s.gone(importer, ns, name); err != nil {
			return fmt.Errorf("the import in cluster %d: %w", importer, err)
		}
		list, err := s.kube(importer).DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: mcsv1beta1.LabelServiceName + "=" + name})
		if err == nil && len(list.Items) > 0 {
			err = fmt.Errorf("%d slices left in cluster %d", len(list.Items), importer)
		}
		return err
	})
}

// testExportedMetadata: the export's exportedLabels and exportedAnnotations
// are written on the import; one the export drops is removed there, while
// what another writer put on the import stays.
func (s *svcEnv) testExportedMetadata(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, 1, 2)
	s.backend(t, 1, ns, "labelled", []string{"10.11.1.70"}, nil)
	exports := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns)
	se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: "labelled", Namespace: ns}, Spec: mcsv1beta1.ServiceExportSpec{
		ExportedLabels:      map[string]string{"tier": "web", "team": "shop"},
		ExportedAnnotations: map[string]string{"example.com/owner": "shop", "example.com/ticket": "T-1"},
	}}
	if _, err := exports.Create(ctx, se, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	metadata := func(labels, annotations map[string]string) func() error {
		return func() error {
			imp, err := s.imported(2, ns, "labelled")
			if err != nil {
				return err
			}
			for k, v := range labels {
				if got, ok := imp.si.Labels[k]; ok != (v != "") || got != v {
					return fmt.Errorf("label %s is %q (present %v), want %q", k, got, ok, v)
				}
			}
			for k, v := range annotations {
				if got, ok := imp.si.Annotations[k]; ok != (v != "") || got != v {
					return fmt.Errorf("annotation %s is %q (present %v), want %q", k, got, ok, v)
				}
			}
			return nil
		}
	}
	framework.EventuallyT(t, svcConverge, "the exported labels and annotations on the import", metadata(
		map[string]string{"tier": "web", "team": "shop"}, map[string]string{"example.com/owner": "shop", "example.com/ticket": "T-1"}))

	// Merge patches, as kubectl label would send: the server writes the
	// import and the export's status meanwhile, so an update could conflict.
	imports := s.mcs(2).MulticlusterV1beta1().ServiceImports(ns)
	userMeta := []byte(`{"metadata":{"labels":{"user-label":"kept"},"annotations":{"example.com/user":"kept"}}}`)
	if _, err := imports.Patch(ctx, "labelled", types.MergePatchType, userMeta, metav1.PatchOptions{}); err != nil {
		t.Fatalf("another writer labelling the import: %v", err)
	}
	drop := []byte(`{"spec":{"exportedLabels":{"tier":null},"exportedAnnotations":{"example.com/ticket":null}}}`)
	if _, err := exports.Patch(ctx, "labelled", types.MergePatchType, drop, metav1.PatchOptions{}); err != nil {
		t.Fatalf("dropping a label and an annotation from the export: %v", err)
	}
	framework.EventuallyT(t, svcConverge, "the dropped label and annotation gone from the import, the others kept", metadata(
		map[string]string{"tier": "", "team": "shop", "user-label": "kept"},
		map[string]string{"example.com/ticket": "", "example.com/owner": "shop", "example.com/user": "kept"}))
}
