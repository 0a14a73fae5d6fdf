package services

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Per-Service computation. The computation is separable by Service: what
// one Service's output reads of other Services is only the clusters'
// shared facts (namespaces, reachability, podCIDRs, namespaces not
// granted). A State keeps the output of each Service computed alone; Next
// recomputes only the Services whose objects were replaced and merges,
// and equals Compute on the same input
// (TestPropertyPerServiceEqualsWhole checks it after every step).
//
// Objects are told apart by identity: the caller replaces an object that
// changes (as the member caches do) and never modifies one in place. An
// unchanged Service keeps the conditions' lastTransitionTime of the
// computation that produced them; Compute stamps every condition with
// Input.Now.

// State is the last output of a mesh's services, kept by Service. Next
// consumes it: only the State it returns may be used afterwards.
type State struct {
	shared shared
	parts  map[types.NamespacedName]*part
}

// shared is what every Service's computation reads of the mesh: when any
// of it changes, every Service is computed again.
type shared struct {
	meshNamespace, meshName, installation string
	meshUID                               types.UID
	clusters                              []Cluster // without their objects
}

// part is one Service's input objects and its output computed alone.
type part struct {
	objs []held // the objects of its input, in input order
	in   *Input
	out  *Output
}

// Start computes every Service alone and merges them: what Compute
// returns, and what Next needs.
func Start(in *Input) (*Output, *State) {
	out, st, _ := (&State{}).Next(in)
	return out, st
}

// Next computes the output for in, recomputing only the Services whose
// objects differ from those of the last input, or every Service when the
// clusters' shared facts differ; recomputed counts them.
func (st *State) Next(in *Input) (out *Output, next *State, recomputed int) {
	next = &State{shared: sharedOf(in), parts: map[types.NamespacedName]*part{}}
	same := st.parts != nil && sameShared(st.shared, next.shared)
	for key, p := range split(in) {
		if old := st.parts[key]; same && old != nil && slices.Equal(old.objs, p.objs) {
			p.out = old.out
		} else {
			p.out = Compute(p.in)
			recomputed++
		}
		p.in = nil // only its objects are kept
		next.parts[key] = p
	}
	st.parts = nil
	return next.merge(in), next, recomputed
}

func sharedOf(in *Input) shared {
	s := shared{meshNamespace: in.MeshNamespace, meshName: in.MeshName, installation: in.Installation, meshUID: in.MeshUID}
	for _, cl := range in.Clusters {
		s.clusters = append(s.clusters, Cluster{Name: cl.Name, PodCIDRs: cl.PodCIDRs, Reachable: cl.Reachable,
			Namespaces: cl.Namespaces, NotGranted: cl.NotGranted, Yielded: cl.Yielded})
	}
	return s
}

func sameShared(a, b shared) bool {
	return a.meshNamespace == b.meshNamespace && a.meshName == b.meshName && a.installation == b.installation && a.meshUID == b.meshUID &&
		slices.EqualFunc(a.clusters, b.clusters, func(x, y Cluster) bool {
			return x.Name == y.Name && x.Reachable == y.Reachable && x.Yielded == y.Yielded && slices.Equal(x.PodCIDRs, y.PodCIDRs) &&
				slices.Equal(x.Namespaces, y.Namespaces) && maps.Equal(x.NotGranted, y.NotGranted)
		})
}

// split gives every Service the input of its computation alone: the
// shared facts of every cluster and the objects its computation reads. A
// Service at the derived name of an exported Service goes to both; an
// object this mesh wrote and no exported Service reads goes to the
// Service its name or labels say, whose computation deletes it.
func split(in *Input) map[types.NamespacedName]*part {
	c := &computation{in: in}
	derived := map[types.NamespacedName][]types.NamespacedName{}
	for _, cl := range in.Clusters {
		for _, se := range cl.Exports {
			key := types.NamespacedName{Namespace: se.Namespace, Name: se.Name}
			d := types.NamespacedName{Namespace: se.Namespace, Name: DerivedServiceName(se.Namespace, se.Name)}
			if !slices.Contains(derived[d], key) {
				derived[d] = append(derived[d], key)
			}
		}
	}
	parts := map[types.NamespacedName]*part{}
	add := func(i int, key types.NamespacedName, obj any) {
		p := parts[key]
		if p == nil {
			p = &part{in: &Input{MeshNamespace: in.MeshNamespace, MeshName: in.MeshName, MeshUID: in.MeshUID,
				Installation: in.Installation, Now: in.Now, Clusters: make([]Cluster, len(in.Clusters))}}
			for j, cl := range in.Clusters {
				p.in.Clusters[j] = Cluster{Name: cl.Name, PodCIDRs: cl.PodCIDRs, Reachable: cl.Reachable,
					Namespaces: cl.Namespaces, NotGranted: cl.NotGranted, Yielded: cl.Yielded}
			}
			parts[key] = p
		}
		p.objs = append(p.objs, held{i, obj})
		to := &p.in.Clusters[i]
		switch o := obj.(type) {
		case *mcsv1beta1.ServiceExport:
			to.Exports = append(to.Exports, o)
		case *corev1.Service:
			to.Services = append(to.Services, o)
		case *discoveryv1.EndpointSlice:
			to.EndpointSlices = append(to.EndpointSlices, o)
		case *mcsv1beta1.ServiceImport:
			to.Imports = append(to.Imports, o)
		}
	}
	for i, cl := range in.Clusters {
		for _, se := range cl.Exports {
			add(i, types.NamespacedName{Namespace: se.Namespace, Name: se.Name}, se)
		}
		for _, svc := range cl.Services {
			key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
			add(i, key, svc)
			for _, k := range derived[key] {
				add(i, k, svc)
			}
		}
		for _, es := range cl.EndpointSlices {
			switch {
			case c.owned(es.Labels):
				add(i, types.NamespacedName{Namespace: es.Namespace, Name: es.Labels[mcsv1beta1.LabelServiceName]}, es)
			case es.Labels[discoveryv1.LabelManagedBy] == ManagedByValue || es.Labels[discoveryv1.LabelServiceName] == "":
				// Read by no Service's computation.
			default:
				add(i, types.NamespacedName{Namespace: es.Namespace, Name: es.Labels[discoveryv1.LabelServiceName]}, es)
			}
		}
		for _, si := range cl.Imports {
			add(i, types.NamespacedName{Namespace: si.Namespace, Name: si.Name}, si)
		}
	}
	return parts
}

// held is one object of a cluster's input, by identity.
type held struct {
	cluster int
	obj     any
}

// merge puts the Services' outputs together as Compute orders them. An
// object this mesh wrote is deleted only when no Service wants it: a
// Service read by two computations is wanted by at most one of them.
func (st *State) merge(in *Input) *Output {
	keys := slices.SortedFunc(maps.Keys(st.parts), func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	// Every part's clusters are in.Clusters sorted by name.
	order := make([]int, len(in.Clusters))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(in.Clusters[a].Name, in.Clusters[b].Name) })
	out := &Output{}
	for j, i := range order {
		co := clusterHead(&in.Clusters[i])
		wanted := map[string]map[types.NamespacedName]bool{"import": {}, "service": {}, "slice": {}}
		var del Deletions
		for _, key := range keys {
			pc := &st.parts[key].out.Clusters[j]
			co.Imports = append(co.Imports, pc.Imports...)
			for _, imp := range pc.Imports {
				markWanted(wanted, imp)
			}
			del.Imports = append(del.Imports, pc.Delete.Imports...)
			del.Services = append(del.Services, pc.Delete.Services...)
			del.EndpointSlices = append(del.EndpointSlices, pc.Delete.EndpointSlices...)
		}
		co.Delete = Deletions{Imports: unwanted(del.Imports, wanted["import"]), Services: unwanted(del.Services, wanted["service"]),
			EndpointSlices: unwanted(del.EndpointSlices, wanted["slice"])}
		out.Clusters = append(out.Clusters, co)
	}
	for _, key := range keys {
		out.Exports = append(out.Exports, st.parts[key].out.Exports...)
	}
	return out
}

func markWanted(wanted map[string]map[types.NamespacedName]bool, imp Import) {
	if imp.ServiceImport != nil {
		wanted["import"][types.NamespacedName{Namespace: imp.Namespace, Name: imp.Name}] = true
	}
	if imp.DerivedService != nil {
		wanted["service"][types.NamespacedName{Namespace: imp.Namespace, Name: imp.DerivedService.Name}] = true
	}
	for _, es := range imp.EndpointSlices {
		wanted["slice"][types.NamespacedName{Namespace: es.Namespace, Name: es.Name}] = true
	}
}

// unwanted is the deletions no Service wants kept, sorted, each once.
func unwanted(l []types.NamespacedName, wanted map[types.NamespacedName]bool) []types.NamespacedName {
	l = slices.DeleteFunc(l, func(k types.NamespacedName) bool { return wanted[k] })
	slices.SortFunc(l, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	if l = slices.Compact(l); len(l) == 0 {
		return nil
	}
	return l
}
