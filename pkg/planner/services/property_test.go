package services

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// randomInput is a mesh of three clusters with random namespaces,
// exports, Services of every kind, slices with addresses inside and outside
// the declared networks, objects written before and a user's, and
// unreachable clusters.
func randomInput(r *rand.Rand) *Input {
	pool := []string{"10.1.0.1", "10.1.0.2", "10.1.3.4", "10.2.0.1", "10.2.9.9", "10.3.0.1", "192.168.1.1", "fd00::1", "garbage", "10.3.0.1"}
	var clusters []Cluster
	for _, name := range []string{"a", "b", "c"} {
		var nss []string
		for _, ns := range []string{"shop", "web"} {
			if r.IntN(4) > 0 {
				nss = append(nss, ns)
			}
		}
		cl := member(name, nss...)
		cl.Reachable = r.IntN(5) > 0
		for _, ns := range nss {
			for _, svc := range []string{"cart", "db", "api"} {
				if r.IntN(2) == 0 {
					continue
				}
				cl = cl.with(exportOf(ns, svc, int64(r.IntN(3))))
				switch r.IntN(5) {
				case 0: // no Service
				case 1:
					cl = cl.with(svcOf(ns, svc, headless))
				case 2:
					cl = cl.with(svcOf(ns, svc, withPorts(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: int32(80 + r.IntN(2))})))
				case 3:
					cl = cl.with(svcOf(ns, svc, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }))
				default:
					cl = cl.with(svcOf(ns, svc))
				}
				for k := range r.IntN(3) {
					var eps []ep
					for range r.IntN(6) {
						eps = append(eps, ep{pool[r.IntN(len(pool))], r.IntN(4) > 0})
					}
					cl = cl.with(controllerSlice(ns, svc, fmt.Sprintf("%s-%d", svc, k), discoveryv1.AddressTypeIPv4, eps...))
				}
			}
			if r.IntN(6) == 0 {
				cl = cl.with(svcOf(ns, DerivedServiceName(ns, "cart")))
			}
			if r.IntN(6) == 0 {
				cl = cl.with(&mcsv1beta1.ServiceImport{ObjectMeta: svcOf(ns, "db").ObjectMeta})
			}
		}
		clusters = append(clusters, cl)
	}
	in := newInput(clusters...)
	if r.IntN(2) == 0 {
		in = written(in, Compute(in))
	}
	return in
}

// shuffled is the same input with every list in another order.
func shuffled(r *rand.Rand, in *Input) *Input {
	out := *in
	out.Clusters = slices.Clone(in.Clusters)
	r.Shuffle(len(out.Clusters), func(i, j int) { out.Clusters[i], out.Clusters[j] = out.Clusters[j], out.Clusters[i] })
	for i := range out.Clusters {
		c := &out.Clusters[i]
		c.Namespaces, c.Exports, c.Services = slices.Clone(c.Namespaces), slices.Clone(c.Exports), slices.Clone(c.Services)
		c.EndpointSlices, c.Imports = slices.Clone(c.EndpointSlices), slices.Clone(c.Imports)
		r.Shuffle(len(c.Namespaces), func(i, j int) { c.Namespaces[i], c.Namespaces[j] = c.Namespaces[j], c.Namespaces[i] })
		r.Shuffle(len(c.Exports), func(i, j int) { c.Exports[i], c.Exports[j] = c.Exports[j], c.Exports[i] })
		r.Shuffle(len(c.Services), func(i, j int) { c.Services[i], c.Services[j] = c.Services[j], c.Services[i] })
		r.Shuffle(len(c.EndpointSlices), func(i, j int) { c.EndpointSlices[i], c.EndpointSlices[j] = c.EndpointSlices[j], c.EndpointSlices[i] })
		r.Shuffle(len(c.Imports), func(i, j int) { c.Imports[i], c.Imports[j] = c.Imports[j], c.Imports[i] })
	}
	return &out
}

// TestInvariants: on random meshes, the output does not depend on the
// order of the input, no endpoint outside its source cluster's declared
// podCIDRs is ever written, everything written carries the mesh's labels,
// and only what the mesh wrote is ever deleted.
func TestInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 1645))
	for i := range 300 {
		in := randomInput(r)
		out := Compute(in)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if again := Compute(shuffled(r, in)); !apiequality.Semantic.DeepEqual(out, again) {
				t.Fatal("the output depends on the order of the input")
			}
			cidrs := map[string][]netip.Prefix{}
			held := map[string]map[types.NamespacedName]map[string]string{} // cluster -> object -> labels
			for _, c := range in.Clusters {
				cidrs[c.Name] = c.PodCIDRs
				held[c.Name] = map[types.NamespacedName]map[string]string{}
				for _, o := range c.Imports {
					held[c.Name][types.NamespacedName{Namespace: "import/" + o.Namespace, Name: o.Name}] = o.Labels
				}
				for _, o := range c.Services {
					held[c.Name][types.NamespacedName{Namespace: "service/" + o.Namespace, Name: o.Name}] = o.Labels
				}
				for _, o := range c.EndpointSlices {
					held[c.Name][types.NamespacedName{Namespace: "slice/" + o.Namespace, Name: o.Name}] = o.Labels
				}
			}
			c := &computation{in: in}
			for _, co := range out.Clusters {
				for _, imp := range co.Imports {
					for _, es := range imp.EndpointSlices {
						src := es.Labels[mcsv1beta1.LabelSourceCluster]
						for _, e := range es.Endpoints {
							a, err := netip.ParseAddr(e.Addresses[0])
							if err != nil || !slices.ContainsFunc(cidrs[src], func(p netip.Prefix) bool { return p.Contains(a) }) {
								t.Errorf("%s: endpoint %s of %s written outside its podCIDRs", co.Name, e.Addresses[0], src)
							}
						}
						if !c.owned(es.Labels) {
							t.Errorf("%s: slice %s without the mesh's labels", co.Name, es.Name)
						}
					}
					if imp.ServiceImport != nil && !c.owned(imp.ServiceImport.Labels) || imp.DerivedService != nil && !c.owned(imp.DerivedService.Labels) {
						t.Errorf("%s: %s/%s written without the mesh's labels", co.Name, imp.Namespace, imp.Name)
					}
				}
				for kind, keys := range map[string][]types.NamespacedName{"import/": co.Delete.Imports, "service/": co.Delete.Services, "slice/": co.Delete.EndpointSlices} {
					for _, k := range keys {
						if l, ok := held[co.Name][types.NamespacedName{Namespace: kind + k.Namespace, Name: k.Name}]; !ok || !c.owned(l) {
							t.Errorf("%s: deletes %s%s, which the mesh did not write", co.Name, kind, k)
						}
					}
				}
			}
		})
	}
}

// TestSteadyState: once what was computed is written, computing again
// wants the same objects and deletes nothing, so a reconciler writes
// nothing in steady state.
func TestSteadyState(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1645))
	for i := range 200 {
		in := randomInput(r)
		first := Compute(in)
		again := Compute(written(in, first))
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			for k, co := range again.Clusters {
				if !apiequality.Semantic.DeepEqual(co.Imports, first.Clusters[k].Imports) {
					t.Errorf("%s: the imports changed once written", co.Name)
				}
				if d := co.Delete; len(d.Imports)+len(d.Services)+len(d.EndpointSlices) != 0 {
					t.Errorf("%s: deletes %+v in steady state", co.Name, d)
				}
			}
		})
	}
}
