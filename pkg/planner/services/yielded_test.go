package services

import (
	"reflect"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// TestYieldedCluster: on a cluster an earlier services mesh holds, this
// mesh writes and deletes nothing, says why in the cluster and its
// imports, and its exports there are still carried to its other clusters
// (a sharing another tenant can cause removes nothing anywhere); once it
// clears, the cluster is served again.
func TestYieldedCluster(t *testing.T) {
	v4 := discoveryv1.AddressTypeIPv4
	exportFrom := func(c Cluster) Cluster {
		return c.with(exportOf("shop", "cart", 0), svcOf("shop", "cart"), controllerSlice("shop", "cart", "cart-x", v4, ep{c.PodCIDRs[0].Addr().Next().String(), true}))
	}
	yield := func(c Cluster) Cluster { c.Yielded = true; return c }
	for _, tc := range []struct {
		name  string
		in    *Input
		check func(t *testing.T, out *Output)
	}{
		{"an import into a yielded cluster is blocked and nothing is written there", newInput(yield(member("a", "shop")), exportFrom(member("b", "shop"))),
			func(t *testing.T, out *Output) {
				co := out.Clusters[0]
				if co.Name != "a" || !co.Yielded || co.Reason != planner.WarningServicesClusterShared || co.Message == "" {
					t.Errorf("cluster a: yielded %v, reason %q, message %q", co.Yielded, co.Reason, co.Message)
				}
				imp := importIn(t, out, "a", "shop", "cart")
				if imp == nil || imp.Blocked != BlockedClusterShared || imp.ServiceImport != nil || imp.DerivedService != nil || len(imp.EndpointSlices) != 0 {
					t.Errorf("import in the yielded cluster: %+v", imp)
				}
			}},
		{"the same cluster not yielded gets the import", newInput(member("a", "shop"), exportFrom(member("b", "shop"))),
			func(t *testing.T, out *Output) {
				if co := out.Clusters[0]; co.Yielded || co.Reason != "" {
					t.Errorf("cluster a: yielded %v, reason %q", co.Yielded, co.Reason)
				}
				if imp := importIn(t, out, "a", "shop", "cart"); imp == nil || imp.Blocked != "" || imp.ServiceImport == nil {
					t.Errorf("import in a: %+v", imp)
				}
			}},
		{"an export of a yielded cluster is still imported elsewhere", newInput(yield(exportFrom(member("a", "shop"))), member("b", "shop")),
			func(t *testing.T, out *Output) {
				imp := importIn(t, out, "b", "shop", "cart")
				if imp == nil || imp.Blocked != "" || imp.Endpoints != 1 || !reflect.DeepEqual(imp.Sources, []string{"a"}) {
					t.Errorf("import in b: %+v", imp)
				}
			}},
		{"what the mesh wrote in a cluster before it yielded stays", func() *Input {
			in := newInput(member("a", "shop"), exportFrom(member("b", "shop")))
			next := written(in, Compute(in))
			next.Clusters[0].Yielded = true
			next.Clusters[1].Exports = nil // the export is gone too: still nothing is deleted in a
			return next
		}(), func(t *testing.T, out *Output) {
			if del := out.Clusters[0].Delete; len(del.Imports)+len(del.Services)+len(del.EndpointSlices) != 0 {
				t.Errorf("deletions in the yielded cluster: %+v", del)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := Compute(tc.in)
			tc.check(t, out)
			// The per-Service computation agrees, also when only the yield changed.
			unyielded := *tc.in
			unyielded.Clusters = append([]Cluster(nil), tc.in.Clusters...)
			for i := range unyielded.Clusters {
				unyielded.Clusters[i].Yielded = false
			}
			_, st := Start(&unyielded)
			if next, _, _ := st.Next(tc.in); !reflect.DeepEqual(next, out) {
				t.Errorf("incremental output differs from Compute:\n%+v\n%+v", next, out)
			}
			// Once the sharing clears, the cluster is served again.
			_, st = Start(tc.in)
			if next, _, _ := st.Next(&unyielded); !reflect.DeepEqual(next, Compute(&unyielded)) {
				t.Errorf("after the yield cleared, incremental output differs from Compute")
			}
		})
	}
}
