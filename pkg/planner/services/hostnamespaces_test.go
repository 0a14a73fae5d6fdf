package services

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHostNamespaceNotGranted: a namespace of the local cluster the mesh
// may not use is neither exported from nor imported into, says why, and
// what the mesh wrote there before is removed.
func TestHostNamespaceNotGranted(t *testing.T) {
	v4 := discoveryv1.AddressTypeIPv4
	exportFrom := func(c Cluster) Cluster {
		return c.with(exportOf("shop", "cart", 0), svcOf("shop", "cart"), controllerSlice("shop", "cart", "cart-x", v4, ep{c.PodCIDRs[0].Addr().Next().String(), true}))
	}
	denied := map[string]string{"shop": "the author may not create serviceimports"}
	for _, tc := range []struct {
		name  string
		in    *Input
		check func(t *testing.T, out *Output)
	}{
		{"an export from a namespace not granted is imported nowhere", func() *Input {
			host := exportFrom(member("a", "shop"))
			host.NotGranted = denied
			return newInput(host, member("b", "shop"))
		}(), func(t *testing.T, out *Output) {
			for _, cl := range []string{"a", "b"} {
				if imp := importIn(t, out, cl, "shop", "cart"); imp != nil {
					t.Errorf("cluster %s imports shop/cart: %+v", cl, imp)
				}
			}
			r := exportResult(t, out, "a", "shop", "cart")
			valid := condition(r.Conditions, "Valid")
			if r.Valid != ExportHostNamespaceNotGranted || valid.Status != metav1.ConditionFalse || valid.Reason != ExportHostNamespaceNotGranted || r.Endpoints != 0 {
				t.Errorf("export result %+v, Valid %+v", r, valid)
			}
			if ready := condition(r.Conditions, "Ready"); ready.Status != metav1.ConditionFalse {
				t.Errorf("Ready %+v", ready)
			}
		}},
		{"an import into a namespace not granted is blocked, elsewhere written", func() *Input {
			host := member("a", "shop")
			host.NotGranted = denied
			return newInput(host, exportFrom(member("b", "shop")), member("c", "shop"))
		}(), func(t *testing.T, out *Output) {
			imp := importIn(t, out, "a", "shop", "cart")
			if imp == nil || imp.Blocked != BlockedHostNamespaceNotGranted || imp.ServiceImport != nil || imp.DerivedService != nil || len(imp.EndpointSlices) != 0 {
				t.Fatalf("import in the host: %+v", imp)
			}
			if other := importIn(t, out, "c", "shop", "cart"); other == nil || other.Blocked != "" || other.ServiceImport == nil {
				t.Errorf("import in c: %+v", other)
			}
			if r := exportResult(t, out, "b", "shop", "cart"); r.Valid != "Valid" {
				t.Errorf("export of b: %+v", r)
			}
		}},
		{"what the mesh wrote before the namespace stopped being granted is removed", func() *Input {
			in := newInput(member("a", "shop"), exportFrom(member("b", "shop")))
			next := written(in, Compute(in))
			next.Clusters[0].NotGranted = denied
			return next
		}(), func(t *testing.T, out *Output) {
			del := out.Clusters[0].Delete
			if len(del.Imports) != 1 || len(del.Services) != 1 || len(del.EndpointSlices) != 1 {
				t.Errorf("deletions in the host: %+v", del)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, Compute(tc.in)) })
	}
}
