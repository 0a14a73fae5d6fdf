package services

import (
	"fmt"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// benchInput is the services performance case: 3 clusters, 500 Services
// exported from cluster a, 10 ready endpoints each, every namespace in
// every cluster; written, when steady, as the reconciler would have.
func benchInput(steady bool) *Input {
	a, b, c := member("a"), member("b"), member("c")
	for i := range 500 {
		ns, name := fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("svc-%d", i)
		var eps []ep
		for k := range 10 {
			eps = append(eps, ep{fmt.Sprintf("10.1.%d.%d", i/25, (i%25)*10+k), true})
		}
		a = a.with(exportOf(ns, name, int64(i)), svcOf(ns, name), controllerSlice(ns, name, name+"-x", discoveryv1.AddressTypeIPv4, eps...))
		if i < 50 {
			a.Namespaces, b.Namespaces, c.Namespaces = append(a.Namespaces, ns), append(b.Namespaces, ns), append(c.Namespaces, ns)
		}
	}
	in := newInput(a, b, c)
	if steady {
		in = written(in, Compute(in))
	}
	return in
}

// BenchmarkCompute computes the services of the mesh above from nothing
// written yet, and in steady state.
func BenchmarkCompute(b *testing.B) {
	for _, steady := range []bool{false, true} {
		in := benchInput(steady)
		b.Run(fmt.Sprintf("steady=%v", steady), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compute(in)
			}
		})
	}
}

// BenchmarkNextOneEndpoint computes the services of the steady mesh above
// after one endpoint of one exported Service changed, per Service.
func BenchmarkNextOneEndpoint(b *testing.B) {
	in := benchInput(true)
	_, st := Start(in)
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		in = withEndpointMoved(in, 0, k%500)
		_, st, _ = st.Next(in)
		k++
	}
}
