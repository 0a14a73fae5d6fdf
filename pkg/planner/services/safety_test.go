package services

import (
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// written turns a computation's output into what the clusters hold once
// the reconciler wrote it, as the next computation's input.
func written(in *Input, out *Output) *Input {
	next := *in
	next.Clusters = slices.Clone(in.Clusters)
	for i := range next.Clusters {
		for _, co := range out.Clusters {
			if co.Name != next.Clusters[i].Name {
				continue
			}
			for _, imp := range co.Imports {
				if imp.ServiceImport != nil {
					next.Clusters[i] = next.Clusters[i].with(imp.ServiceImport)
				}
				if imp.DerivedService != nil {
					next.Clusters[i] = next.Clusters[i].with(imp.DerivedService)
				}
				for _, es := range imp.EndpointSlices {
					next.Clusters[i] = next.Clusters[i].with(es)
				}
			}
		}
	}
	return &next
}

// TestSafety covers what a member cluster's users can do to the
// computation: addresses outside the declared networks, names taken, a
// ServiceImport of their own, a namespace missing, a cluster gone quiet.
func TestSafety(t *testing.T) {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	exporting := member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart"),
		controllerSlice("shop", "cart", "cart-x", v4, ep{"10.1.0.5", true}))
	userImport := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart", Labels: map[string]string{"app": "mine"}}}
	userService := svcOf("shop", DerivedServiceName("shop", "cart"))
	for _, tc := range []struct {
		name  string
		in    *Input
		check func(t *testing.T, out *Output)
	}{
		{"endpoints outside the exporter's podCIDRs are never written, and counted", newInput(
			member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart"),
				controllerSlice("shop", "cart", "cart-x", v4, ep{"10.1.0.5", true}, ep{"10.2.0.9", true}, ep{"192.168.0.5", true},
					ep{"10.1.0.6", false}, ep{"192.168.0.6", false}, ep{"not-an-ip", true}, ep{"10.1.0.5", true}),
				controllerSlice("shop", "cart", "cart-y", v6, ep{"10.1.0.7", true}, ep{"fd00::1", true}),
				controllerSlice("shop", "cart", "cart-z", discoveryv1.AddressTypeFQDN, ep{"cart.example.com", true})),
			member("b", "shop"),
		), func(t *testing.T, out *Output) {
			for _, cl := range []string{"a", "b"} {
				if got := addresses(importIn(t, out, cl, "shop", "cart").EndpointSlices); !slices.Equal(got, []string{"10.1.0.5"}) {
					t.Errorf("%s: endpoints %v, want only 10.1.0.5", cl, got)
				}
			}
			r := exportResult(t, out, "a", "shop", "cart")
			want := []meshv1alpha1.ReasonCount{{Reason: LeftOutDuplicateAddress, Count: 1}, {Reason: LeftOutInvalidAddress, Count: 2},
				{Reason: LeftOutNotReady, Count: 1}, {Reason: LeftOutOutsidePodCIDRs, Count: 4}, {Reason: LeftOutUnsupportedAddressType, Count: 1}}
			if !slices.Equal(r.LeftOut, want) || r.Endpoints != 1 {
				t.Errorf("left out %v (%d carried), want %v", r.LeftOut, r.Endpoints, want)
			}
			if c := condition(r.Conditions, "Ready"); !strings.Contains(c.Message, "4 OutsidePodCIDRs") {
				t.Errorf("the export says why: %s", c.Message)
			}
		}},
		{"a user's Service at the derived name is reported, never overwritten", newInput(
			exporting, member("b", "shop").with(userService),
		), func(t *testing.T, out *Output) {
			imp := importIn(t, out, "b", "shop", "cart")
			if imp.Blocked != BlockedDerivedServiceTaken || imp.DerivedService != nil || len(imp.EndpointSlices) != 0 {
				t.Fatalf("import %+v, want blocked without derived Service or slices", imp)
			}
			if c := condition(imp.ServiceImport.Status.Conditions, "Ready"); c.Status != metav1.ConditionFalse || c.Reason != BlockedDerivedServiceTaken {
				t.Errorf("Ready %+v", c)
			}
			if a, ok := imp.ServiceImport.Annotations[AnnotationDerivedService]; ok {
				t.Errorf("the import points at the user's Service %s", a)
			}
			if del := out.Clusters[1].Delete.Services; len(del) != 0 {
				t.Errorf("deletes %v", del)
			}
			if c := condition(exportResult(t, out, "a", "shop", "cart").Conditions, "Ready"); !strings.Contains(c.Message, "b (DerivedServiceTaken)") {
				t.Errorf("the export says where it is not imported: %s", c.Message)
			}
		}},
		{"a ServiceImport a user wrote is reported, never overwritten", newInput(
			exporting, member("b", "shop").with(userImport),
		), func(t *testing.T, out *Output) {
			imp := importIn(t, out, "b", "shop", "cart")
			if imp.Blocked != BlockedImportNotOwned || imp.ServiceImport != nil || imp.DerivedService != nil || len(imp.EndpointSlices) != 0 {
				t.Fatalf("import %+v, want blocked with nothing written", imp)
			}
			if del := out.Clusters[1].Delete.Imports; len(del) != 0 {
				t.Errorf("deletes %v", del)
			}
		}},
		{"no import into a namespace that does not exist", newInput(
			exporting, member("b", "shop"), member("c", "other"),
		), func(t *testing.T, out *Output) {
			if imp := importIn(t, out, "c", "shop", "cart"); imp.Blocked != BlockedNamespaceMissing || imp.ServiceImport != nil {
				t.Errorf("c: %+v", imp)
			}
			if imp := importIn(t, out, "b", "shop", "cart"); imp.Blocked != "" || imp.ServiceImport == nil {
				t.Errorf("b: %+v", imp)
			}
		}},
		{"an unreachable exporter's last known endpoints are kept, and said to be", newInput(
			func() Cluster { c := exporting; c.Reachable = false; return c }(), member("b", "shop"),
		), func(t *testing.T, out *Output) {
			imp := importIn(t, out, "b", "shop", "cart")
			if got := addresses(imp.EndpointSlices); !slices.Equal(got, []string{"10.1.0.5"}) {
				t.Errorf("endpoints %v", got)
			}
			if c := condition(imp.ServiceImport.Status.Conditions, "Ready"); !strings.Contains(c.Message, "last known") {
				t.Errorf("Ready message %q", c.Message)
			}
			if r := exportResult(t, out, "a", "shop", "cart"); !r.Stale {
				t.Errorf("export %+v, want Stale", r)
			}
		}},
		{"the last unexport deletes what was written, and only that", func() *Input {
			in := newInput(exporting, member("b", "shop"))
			in = written(in, Compute(in))
			in.Clusters[0].Exports = nil
			foreign := userImport.DeepCopy()
			foreign.Name = "other"
			in.Clusters[1] = in.Clusters[1].with(foreign, svcOf("shop", "cart"))
			return in
		}(), func(t *testing.T, out *Output) {
			derived := types.NamespacedName{Namespace: "shop", Name: DerivedServiceName("shop", "cart")}
			for _, co := range out.Clusters {
				if len(co.Imports) != 0 || !slices.Equal(co.Delete.Imports, []types.NamespacedName{{Namespace: "shop", Name: "cart"}}) ||
					!slices.Equal(co.Delete.Services, []types.NamespacedName{derived}) || len(co.Delete.EndpointSlices) != 1 {
					t.Errorf("%s: imports %v, deletes %+v", co.Name, co.Imports, co.Delete)
				}
			}
		}},
		{"an export being deleted is an unexport", func() *Input {
			in := newInput(exporting, member("b", "shop"))
			in = written(in, Compute(in))
			gone := in.Clusters[0].Exports[0].DeepCopy()
			gone.DeletionTimestamp = &metav1.Time{Time: now}
			in.Clusters[0].Exports = []*mcsv1beta1.ServiceExport{gone}
			return in
		}(), func(t *testing.T, out *Output) {
			for _, co := range out.Clusters {
				if len(co.Imports) != 0 || len(co.Delete.Imports) != 1 {
					t.Errorf("%s: imports %v, deletes %+v", co.Name, co.Imports, co.Delete)
				}
			}
		}},
		{"written import slices are not exported again", func() *Input {
			in := newInput(exporting, member("b", "shop").with(exportOf("shop", "cart", 5), svcOf("shop", "cart")))
			return written(in, Compute(in))
		}(), func(t *testing.T, out *Output) {
			if r := exportResult(t, out, "b", "shop", "cart"); r.Endpoints != 0 {
				t.Errorf("b carries %d endpoints: its import's slices came back as its own", r.Endpoints)
			}
			if got := addresses(importIn(t, out, "a", "shop", "cart").EndpointSlices); !slices.Equal(got, []string{"10.1.0.5"}) {
				t.Errorf("endpoints %v", got)
			}
			for _, co := range out.Clusters {
				if d := co.Delete; len(d.Imports)+len(d.Services)+len(d.EndpointSlices) != 0 {
					t.Errorf("%s: steady state deletes %+v", co.Name, d)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, Compute(tc.in)) })
	}
}
