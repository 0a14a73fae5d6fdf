package services

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestView: the view shows, from the computation's own output, what each
// cluster imports and how each export fared.
func TestView(t *testing.T) {
	in := newInput(
		member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart"),
			controllerSlice("shop", "cart", "cart-x", discoveryv1.AddressTypeIPv4, ep{"10.1.0.5", true}, ep{"10.1.0.6", true}, ep{"172.16.0.1", true})),
		member("b", "shop").with(exportOf("shop", "cart", 5), svcOf("shop", "cart", withPorts(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 81})),
			controllerSlice("shop", "cart", "cart-y", discoveryv1.AddressTypeIPv4, ep{"10.2.0.5", false})),
		member("c"),
	)
	in = written(in, Compute(in))
	for i := range in.Clusters {
		for _, s := range in.Clusters[i].Services {
			if s.Name == DerivedServiceName("shop", "cart") {
				s.Spec.ClusterIPs = []string{"10.97.0.1"}
			}
		}
	}
	out := Compute(in)
	v := View("tenant", "prod", now, out)
	if v.Name != "prod" || v.Namespace != "tenant" || !v.GeneratedAt.Time.Equal(now) || len(v.Clusters) != 3 {
		t.Fatalf("view %+v", v)
	}
	for _, tc := range []struct {
		cluster string
		want    meshv1alpha1.ImportState
	}{
		{"a", meshv1alpha1.ImportState{Namespace: "shop", Name: "cart", Type: "ClusterSetIP", IPs: []string{"10.97.0.1"},
			Ports: []meshv1alpha1.ImportPort{{Name: "http", Protocol: "TCP", Port: 80}}, DerivedService: DerivedServiceName("shop", "cart"),
			SourceClusters: []string{"a", "b"}, Endpoints: 2}},
		{"c", meshv1alpha1.ImportState{Namespace: "shop", Name: "cart", Type: "ClusterSetIP", SourceClusters: []string{"a", "b"}, Blocked: BlockedNamespaceMissing}},
	} {
		t.Run("imports of "+tc.cluster, func(t *testing.T) {
			i := slices.IndexFunc(v.Clusters, func(c meshv1alpha1.ClusterImports) bool { return c.Cluster == tc.cluster })
			if i < 0 || len(v.Clusters[i].Imports) != 1 {
				t.Fatalf("cluster %s: %+v", tc.cluster, v.Clusters)
			}
			got := v.Clusters[i].Imports[0]
			got.Message = ""
			if !equalImportState(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("exports", func(t *testing.T) {
		want := []meshv1alpha1.ExportState{
			{Cluster: "a", Namespace: "shop", Name: "cart", Valid: "Valid", Conflicts: []string{"PortConflict"}, Endpoints: 2,
				LeftOut: []meshv1alpha1.ReasonCount{{Reason: LeftOutOutsidePodCIDRs, Count: 1}}},
			{Cluster: "b", Namespace: "shop", Name: "cart", Valid: "Valid", Conflicts: []string{"PortConflict"},
				LeftOut: []meshv1alpha1.ReasonCount{{Reason: LeftOutNotReady, Count: 1}}},
		}
		if len(v.Exports) != len(want) {
			t.Fatalf("exports %+v", v.Exports)
		}
		for i := range want {
			g, w := v.Exports[i], want[i]
			if g.Cluster != w.Cluster || g.Valid != w.Valid || !slices.Equal(g.Conflicts, w.Conflicts) || g.Endpoints != w.Endpoints || !slices.Equal(g.LeftOut, w.LeftOut) || g.Stale {
				t.Errorf("export %d: got %+v, want %+v", i, g, w)
			}
		}
	})
}

func equalImportState(a, b meshv1alpha1.ImportState) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.Type == b.Type && slices.Equal(a.IPs, b.IPs) &&
		slices.Equal(a.Ports, b.Ports) && a.DerivedService == b.DerivedService && slices.Equal(a.SourceClusters, b.SourceClusters) &&
		a.Endpoints == b.Endpoints && a.Blocked == b.Blocked
}
