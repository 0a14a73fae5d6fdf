package reconciler

import (
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// TestServicesCurrent: an import found current is not compared again while
// both its sides are the same objects, and is compared again as soon as
// either is replaced.
func TestServicesCurrent(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "prod", UID: "uid-1"}}
	source := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: "cart-x", Labels: map[string]string{discoveryv1.LabelServiceName: "cart"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	in := &services.Input{MeshNamespace: mesh.Namespace, MeshName: mesh.Name, MeshUID: mesh.UID, Now: time.Unix(1_700_000_000, 0), Clusters: []services.Cluster{
		{Name: "a", Reachable: true, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, Namespaces: []string{"shop"},
			Exports:        []*mcsv1beta1.ServiceExport{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}}},
			Services:       []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}},
			EndpointSlices: []*discoveryv1.EndpointSlice{source}},
		{Name: "b", Reachable: true, Namespaces: []string{"shop"}},
	}}
	out := services.Compute(in)
	co := &out.Clusters[1]
	if len(co.Imports) != 1 || co.Imports[0].ServiceImport == nil || len(co.Imports[0].EndpointSlices) != 1 {
		t.Fatalf("cluster b: %+v, want one headless import with one slice", co.Imports)
	}
	imp := &co.Imports[0]
	held := &clusters.ServicesState{Imports: []*mcsv1beta1.ServiceImport{imp.ServiceImport.DeepCopy()},
		EndpointSlices: []*discoveryv1.EndpointSlice{imp.EndpointSlices[0].DeepCopy()}}
	key := types.NamespacedName{Namespace: "shop", Name: "cart"}
	pass := func(known *clusterCurrent, have *clusters.ServicesState, want *services.Import) (*servicesPass, bool) {
		p := newServicesPass(t.Context(), mesh, co, nil, have, nil, false)
		if known != nil {
			p.known = known
		}
		return p, p.current(want)
	}

	first, ok := pass(nil, held, imp)
	if !ok || first.found.imports[key].want != imp.ServiceImport {
		t.Fatalf("written as wanted: current %v, found %+v", ok, first.found)
	}
	// Edited in place, which neither the caches nor the computation do:
	// only a comparison would see it, so none happened.
	held.EndpointSlices[0].Endpoints[0].Addresses = []string{"10.1.0.6"}
	if _, ok := pass(first.found, held, imp); !ok {
		t.Error("the same objects on both sides were compared again")
	}
	for _, tc := range []struct {
		name string
		have *clusters.ServicesState
		want *services.Import
	}{
		{"the member cache replaced the slice", &clusters.ServicesState{Imports: held.Imports,
			EndpointSlices: []*discoveryv1.EndpointSlice{held.EndpointSlices[0].DeepCopy()}}, imp},
		{"the computation replaced the import", held, &services.Import{Namespace: imp.Namespace, Name: imp.Name, Type: imp.Type,
			ServiceImport: imp.ServiceImport.DeepCopy(), EndpointSlices: []*discoveryv1.EndpointSlice{imp.EndpointSlices[0].DeepCopy()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := pass(first.found, tc.have, tc.want); ok {
				t.Error("compared with what the last pass found, not with the objects: the endpoint moved and the import is current")
			}
		})
	}
}

// TestServicesCurrentExports: an export whose conditions were found
// current is not compared again while its computed conditions and its
// ServiceExport are the same objects, and is as soon as one is replaced.
func TestServicesCurrentExports(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "prod", UID: "uid-1"}}
	want := services.ExportResult{Cluster: "a", Namespace: "shop", Name: "cart", Conditions: []metav1.Condition{
		{Type: "Valid", Status: metav1.ConditionTrue, Reason: "Valid", Message: "the Service can be exported"}}}
	held := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"},
		Status: mcsv1beta1.ServiceExportStatus{Conditions: want.Conditions}}
	co := &services.ClusterOutput{Name: "a"}
	pass := func(known *clusterCurrent, r *services.ExportResult, have *mcsv1beta1.ServiceExport) (*servicesPass, bool) {
		p := newServicesPass(t.Context(), mesh, co, nil, &clusters.ServicesState{}, nil, false)
		if known != nil {
			p.known = known
		}
		_, changed := p.exportConditions(r, have)
		return p, changed
	}
	first, changed := pass(nil, &want, held)
	if changed || first.found.exports[types.NamespacedName{Namespace: "shop", Name: "cart"}].have != held {
		t.Fatalf("held as wanted: changed %v, found %+v", changed, first.found.exports)
	}
	// Edited in place, which neither the caches nor the computation do:
	// only a comparison would see it, so none happened.
	held.Status.Conditions = []metav1.Condition{{Type: "Valid", Status: metav1.ConditionFalse, Reason: "NoService"}}
	if _, changed := pass(first.found, &want, held); changed {
		t.Error("the same objects on both sides were compared again")
	}
	recomputed := want
	recomputed.Conditions = append([]metav1.Condition(nil), want.Conditions...)
	for _, tc := range []struct {
		name string
		r    *services.ExportResult
		have *mcsv1beta1.ServiceExport
	}{
		{"the member cache replaced the export", &want, held.DeepCopy()},
		{"the computation replaced the conditions", &recomputed, held},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, changed := pass(first.found, tc.r, tc.have); !changed {
				t.Error("compared with what the last pass found, not with the objects: the held conditions differ")
			}
		})
	}
}
