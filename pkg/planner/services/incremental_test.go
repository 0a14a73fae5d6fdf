package services

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// perServiceSequences and perServiceSteps size the property: hundreds of
// random meshes, each changed a few dozen times.
const (
	perServiceSequences = 400
	perServiceSteps     = 24
)

// TestPropertyPerServiceEqualsWhole drives random sequences of changes
// (endpoints, slices, exports, Services, the reconciler's writes, the
// clusters' shared facts, objects replaced by equal copies) through Next
// and through Compute, and requires the very same Output after every step.
// Set SERVICES_SEED to run one sequence again; a failure prints its seed
// and the steps so far.
func TestPropertyPerServiceEqualsWhole(t *testing.T) {
	first, last := uint64(0), uint64(perServiceSequences)
	if s := os.Getenv("SERVICES_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SERVICES_SEED=%q: %v", s, err)
		}
		first, last = seed, seed+1
	}
	var steps, partial int
	for seed := first; seed < last; seed++ {
		r := rand.New(rand.NewPCG(seed, 20))
		in := randomInput(r)
		got, st := Start(in)
		if want := Compute(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d (SERVICES_SEED=%d): Start and Compute differ: %s", seed, seed, outputDiff(got, want))
		}
		var done []string
		for range perServiceSteps {
			kind := perServiceStepKinds[r.IntN(len(perServiceStepKinds))]
			in = kind.apply(r, in)
			done = append(done, kind.name)
			var recomputed int
			got, st, recomputed = st.Next(in)
			steps++
			if recomputed < len(split(in)) {
				partial++
			}
			if want := Compute(in); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d (SERVICES_SEED=%d): per-Service and whole outputs differ after %v: %s", seed, seed, done, outputDiff(got, want))
			}
		}
	}
	t.Logf("%d steps, %d of them recomputed only some Services", steps, partial)
	// A property that never recomputes less than everything proves nothing.
	if first == 0 && partial < steps/4 {
		t.Errorf("only %d of %d steps recomputed less than every Service", partial, steps)
	}
}

// TestNextRecomputesOneService: an endpoint change of one exported Service
// of many recomputes that Service alone, and nothing changed recomputes
// nothing.
func TestNextRecomputesOneService(t *testing.T) {
	in := benchInput(true)
	_, st := Start(in)
	_, st, n := st.Next(in)
	if n != 0 {
		t.Errorf("nothing changed: %d Services recomputed, want 0", n)
	}
	in = withEndpointMoved(in, 0, 7)
	got, _, n := st.Next(in)
	if n != 1 {
		t.Errorf("one endpoint changed: %d Services recomputed, want 1", n)
	}
	if want := Compute(in); !reflect.DeepEqual(got, want) {
		t.Errorf("per-Service and whole outputs differ: %s", outputDiff(got, want))
	}
}

// withEndpointMoved replaces the k-th source slice of cluster i by one
// whose first endpoint has another address inside the cluster's podCIDRs.
func withEndpointMoved(in *Input, i, k int) *Input {
	next := *in
	next.Clusters = slices.Clone(in.Clusters)
	cl := &next.Clusters[i]
	cl.EndpointSlices = slices.Clone(cl.EndpointSlices)
	es := cl.EndpointSlices[k].DeepCopy()
	es.Endpoints[0].Addresses = []string{"10.1.250.250"}
	cl.EndpointSlices[k] = es
	return &next
}

func outputDiff(got, want *Output) string {
	if len(got.Clusters) != len(want.Clusters) {
		return fmt.Sprintf("%d clusters, want %d", len(got.Clusters), len(want.Clusters))
	}
	for i := range got.Clusters {
		g, w := got.Clusters[i], want.Clusters[i]
		if !reflect.DeepEqual(g.Delete, w.Delete) {
			return fmt.Sprintf("cluster %s deletes %+v, want %+v", w.Name, g.Delete, w.Delete)
		}
		if !reflect.DeepEqual(g, w) {
			return fmt.Sprintf("cluster %s: %d imports, want %d; got %+v, want %+v", w.Name, len(g.Imports), len(w.Imports), g, w)
		}
	}
	return fmt.Sprintf("export results %+v, want %+v", got.Exports, want.Exports)
}

type perServiceStep struct {
	name  string
	apply func(r *rand.Rand, in *Input) *Input
}

var (
	stepNamespaces = []string{"shop", "web"}
	stepServices   = []string{"cart", "db", "api"}
	stepAddresses  = []string{"10.1.0.1", "10.1.0.7", "10.2.0.1", "10.2.4.4", "10.3.0.1", "10.3.0.9", "192.168.1.1", "fd00::1"}
)

// perServiceStepKinds are the changes a mesh's services go through; each
// replaces the objects it changes and copies the lists it edits.
var perServiceStepKinds = []perServiceStep{
	{"endpoint", func(r *rand.Rand, in *Input) *Input {
		return editCluster(r, in, func(cl *Cluster) {
			var sources []int
			for k, es := range cl.EndpointSlices {
				if es.Labels[discoveryv1.LabelManagedBy] != ManagedByValue && len(es.Endpoints) > 0 {
					sources = append(sources, k)
				}
			}
			if len(sources) == 0 {
				return
			}
			k := sources[r.IntN(len(sources))]
			es := cl.EndpointSlices[k].DeepCopy()
			e := &es.Endpoints[r.IntN(len(es.Endpoints))]
			ready := r.IntN(4) > 0
			e.Addresses, e.Conditions.Ready = []string{stepAddresses[r.IntN(len(stepAddresses))]}, &ready
			cl.EndpointSlices[k] = es
		})
	}},
	{"slice", func(r *rand.Rand, in *Input) *Input {
		return editCluster(r, in, func(cl *Cluster) {
			if len(cl.EndpointSlices) > 0 && r.IntN(2) == 0 {
				k := r.IntN(len(cl.EndpointSlices))
				cl.EndpointSlices = slices.Delete(cl.EndpointSlices, k, k+1)
				return
			}
			ns, svc := stepNamespaces[r.IntN(2)], stepServices[r.IntN(3)]
			name := fmt.Sprintf("%s-new-%d", svc, r.IntN(1000))
			cl.EndpointSlices = replaced(cl.EndpointSlices, controllerSlice(ns, svc, name, discoveryv1.AddressTypeIPv4,
				ep{stepAddresses[r.IntN(len(stepAddresses))], true}, ep{stepAddresses[r.IntN(len(stepAddresses))], r.IntN(2) == 0}))
		})
	}},
	{"export", func(r *rand.Rand, in *Input) *Input {
		return editCluster(r, in, func(cl *Cluster) {
			ns, svc := stepNamespaces[r.IntN(2)], stepServices[r.IntN(3)]
			switch k := slices.IndexFunc(cl.Exports, func(se *mcsv1beta1.ServiceExport) bool { return se.Namespace == ns && se.Name == svc }); {
			case k < 0:
				se := exportOf(ns, svc, int64(r.IntN(3)))
				if r.IntN(3) == 0 {
					se.Spec.ExportedLabels = map[string]string{"tier": "gold"}
				}
				cl.Exports = append(cl.Exports, se)
			case r.IntN(3) == 0:
				se := cl.Exports[k].DeepCopy()
				se.DeletionTimestamp = &metav1.Time{Time: now}
				cl.Exports[k] = se
			default:
				cl.Exports = slices.Delete(cl.Exports, k, k+1)
			}
		})
	}},
	{"service", func(r *rand.Rand, in *Input) *Input {
		return editCluster(r, in, func(cl *Cluster) {
			ns, name := stepNamespaces[r.IntN(2)], stepServices[r.IntN(3)]
			if r.IntN(5) == 0 {
				name = DerivedServiceName(ns, name) // taken by a user
			}
			k := slices.IndexFunc(cl.Services, func(s *corev1.Service) bool { return s.Namespace == ns && s.Name == name })
			if k >= 0 && r.IntN(3) == 0 {
				cl.Services = slices.Delete(cl.Services, k, k+1)
				return
			}
			var mutate []func(*corev1.Service)
			switch r.IntN(4) {
			case 0:
				mutate = append(mutate, headless)
			case 1:
				mutate = append(mutate, withPorts(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: int32(80 + r.IntN(2))}))
			case 2:
				mutate = append(mutate, func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP })
			}
			cl.Services = replaced(cl.Services, svcOf(ns, name, mutate...))
		})
	}},
	{"written", func(r *rand.Rand, in *Input) *Input { return applied(in, Compute(in)) }},
	{"shared", func(r *rand.Rand, in *Input) *Input {
		return editCluster(r, in, func(cl *Cluster) {
			switch r.IntN(4) {
			case 0:
				cl.Reachable = !cl.Reachable
			case 3:
				// A reason can arrive after the cluster became unreachable.
				cl.Reason, cl.Message = []string{"", "MCSCRDMissing", "TooManyEndpoints"}[r.IntN(3)], "reason "+strconv.Itoa(r.IntN(3))
			case 1:
				ns := stepNamespaces[r.IntN(2)]
				if k := slices.Index(cl.Namespaces, ns); k >= 0 {
					cl.Namespaces = slices.Delete(cl.Namespaces, k, k+1)
				} else {
					cl.Namespaces = append(cl.Namespaces, ns)
				}
			default:
				if cl.NotGranted != nil {
					cl.NotGranted = nil
				} else {
					cl.NotGranted = map[string]string{stepNamespaces[r.IntN(2)]: "no grant names it"}
				}
			}
		})
	}},
	{"copy", func(r *rand.Rand, in *Input) *Input {
		return editCluster(r, in, func(cl *Cluster) {
			for k := range cl.Services {
				cl.Services[k] = cl.Services[k].DeepCopy()
			}
		})
	}},
}

// editCluster applies edit to copies of a random cluster's lists.
func editCluster(r *rand.Rand, in *Input, edit func(cl *Cluster)) *Input {
	next := *in
	next.Clusters = slices.Clone(in.Clusters)
	cl := &next.Clusters[r.IntN(len(next.Clusters))]
	cl.Namespaces, cl.Exports, cl.Services = slices.Clone(cl.Namespaces), slices.Clone(cl.Exports), slices.Clone(cl.Services)
	cl.EndpointSlices, cl.Imports = slices.Clone(cl.EndpointSlices), slices.Clone(cl.Imports)
	edit(cl)
	return &next
}

// replaced is l with obj in place of the object of its name, or added.
func replaced[T metav1.Object](l []T, obj T) []T {
	if k := slices.IndexFunc(l, func(o T) bool { return o.GetNamespace() == obj.GetNamespace() && o.GetName() == obj.GetName() }); k >= 0 {
		l[k] = obj
		return l
	}
	return append(l, obj)
}

// applied is in once a reconciler wrote out: the wanted objects created or
// replaced (a derived Service given a cluster IP), the deletions done.
func applied(in *Input, out *Output) *Input {
	next := *in
	next.Clusters = slices.Clone(in.Clusters)
	for i := range next.Clusters {
		cl := &next.Clusters[i]
		cl.Services, cl.EndpointSlices, cl.Imports = slices.Clone(cl.Services), slices.Clone(cl.EndpointSlices), slices.Clone(cl.Imports)
		for _, co := range out.Clusters {
			if co.Name != cl.Name || !co.Reachable {
				continue
			}
			for _, imp := range co.Imports {
				if imp.ServiceImport != nil {
					cl.Imports = replaced(cl.Imports, imp.ServiceImport)
				}
				if d := imp.DerivedService; d != nil {
					d = d.DeepCopy()
					d.Spec.ClusterIP, d.Spec.ClusterIPs = "10.96.7.7", []string{"10.96.7.7"}
					cl.Services = replaced(cl.Services, d)
				}
				for _, es := range imp.EndpointSlices {
					cl.EndpointSlices = replaced(cl.EndpointSlices, es)
				}
			}
			cl.Imports = without(cl.Imports, co.Delete.Imports)
			cl.Services = without(cl.Services, co.Delete.Services)
			cl.EndpointSlices = without(cl.EndpointSlices, co.Delete.EndpointSlices)
		}
	}
	return &next
}

func without[T metav1.Object](l []T, keys []types.NamespacedName) []T {
	return slices.DeleteFunc(l, func(o T) bool {
		return slices.Contains(keys, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
	})
}
