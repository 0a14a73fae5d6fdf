package services

import (
	"encoding/json"
	"slices"
	"strings"
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

// TestViewHidesHostNamespaceNotGranted: exports and imports in a host
// namespace the mesh may not use, which may be another tenant's, are
// counted in the view and never named there.
func TestViewHidesHostNamespaceNotGranted(t *testing.T) {
	v4 := discoveryv1.AddressTypeIPv4
	host := member("a", "victim", "shared").with(exportOf("victim", "cart", 0), svcOf("victim", "cart"),
		controllerSlice("victim", "cart", "cart-x", v4, ep{"10.1.0.5", true}))
	host.NotGranted = map[string]string{"victim": "the author may not create serviceimports", "shared": "the author may not create serviceimports"}
	other := member("b", "shared").with(exportOf("shared", "db", 0), svcOf("shared", "db"),
		controllerSlice("shared", "db", "db-x", v4, ep{"10.2.0.5", true}))
	out := Compute(newInput(host, other))
	if r := exportResult(t, out, "a", "victim", "cart"); r.Valid != ExportHostNamespaceNotGranted {
		t.Fatalf("the host's export is not refused, the test proves nothing: %+v", r)
	}
	v := View("tenant", "prod", now, out)
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"victim", "cart", "nothing is written into"} {
		t.Run("the view does not carry "+secret, func(t *testing.T) {
			if strings.Contains(string(raw), secret) {
				t.Errorf("the view carries %q: %s", secret, raw)
			}
		})
	}
	hidden := []meshv1alpha1.ReasonCount{{Reason: BlockedHostNamespaceNotGranted, Count: 1}}
	for _, tc := range []struct {
		cluster                string
		imports, exports       []meshv1alpha1.ReasonCount
		shownImports, shownExp int
	}{
		{"a", hidden, hidden, 0, 0},
		{"b", nil, nil, 1, 1},
	} {
		t.Run("counts of "+tc.cluster, func(t *testing.T) {
			i := slices.IndexFunc(v.Clusters, func(c meshv1alpha1.ClusterImports) bool { return c.Cluster == tc.cluster })
			if i < 0 {
				t.Fatalf("no cluster %s in %+v", tc.cluster, v.Clusters)
			}
			c := v.Clusters[i]
			exported := 0
			for _, e := range v.Exports {
				if e.Cluster == tc.cluster {
					exported++
				}
			}
			if !slices.Equal(c.HiddenImports, tc.imports) || !slices.Equal(c.HiddenExports, tc.exports) || len(c.Imports) != tc.shownImports || exported != tc.shownExp {
				t.Errorf("cluster %s: %+v, %d exports shown", tc.cluster, c, exported)
			}
		})
	}
}

// TestViewClusterReason: the view says why a cluster's services are not
// used, and nothing for a cluster whose are.
func TestViewClusterReason(t *testing.T) {
	unused := member("a")
	unused.Reason, unused.Message = "MCSCRDMissing", "install the mcs-api CRDs"
	v := View("tenant", "prod", now, Compute(newInput(unused, member("b"))))
	for _, tc := range []struct{ cluster, reason, message string }{
		{"a", "MCSCRDMissing", "install the mcs-api CRDs"},
		{"b", "", ""},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			i := slices.IndexFunc(v.Clusters, func(c meshv1alpha1.ClusterImports) bool { return c.Cluster == tc.cluster })
			if i < 0 || v.Clusters[i].Reason != tc.reason || v.Clusters[i].Message != tc.message {
				t.Errorf("clusters %+v, want %s with reason %q", v.Clusters, tc.cluster, tc.reason)
			}
		})
	}
}
