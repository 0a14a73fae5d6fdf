package services

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Compute returns what every member cluster must hold for the mesh's
// exported Services and how every ServiceExport fared.
func Compute(in *Input) *Output {
	c := &computation{in: in}
	for i := range in.Clusters {
		c.clusters = append(c.clusters, c.state(&in.Clusters[i]))
	}
	slices.SortFunc(c.clusters, func(a, b *clusterState) int { return strings.Compare(a.Name, b.Name) })
	svcs := c.services()
	out := &Output{}
	for _, cl := range c.clusters {
		out.Clusters = append(out.Clusters, c.clusterOutput(cl, svcs))
	}
	out.Exports = c.exportResults(svcs, out.Clusters)
	return out
}

type computation struct {
	in       *Input
	clusters []*clusterState // sorted by name
}

// clusterState indexes one cluster's input.
type clusterState struct {
	*Cluster
	namespaces map[string]bool
	services   map[types.NamespacedName]*corev1.Service
	imports    map[types.NamespacedName]*mcsv1beta1.ServiceImport
	// sources are the exported Services' own slices, by Service.
	sources map[types.NamespacedName][]*discoveryv1.EndpointSlice
	owned   []*discoveryv1.EndpointSlice
}

func (c *computation) state(cl *Cluster) *clusterState {
	s := &clusterState{
		Cluster:    cl,
		namespaces: map[string]bool{},
		services:   map[types.NamespacedName]*corev1.Service{},
		imports:    map[types.NamespacedName]*mcsv1beta1.ServiceImport{},
		sources:    map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
	}
	for _, ns := range cl.Namespaces {
		s.namespaces[ns] = true
	}
	for _, svc := range cl.Services {
		s.services[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] = svc
	}
	for _, imp := range cl.Imports {
		s.imports[types.NamespacedName{Namespace: imp.Namespace, Name: imp.Name}] = imp
	}
	for _, es := range cl.EndpointSlices {
		switch {
		case c.owned(es.Labels):
			s.owned = append(s.owned, es)
		case es.Labels[discoveryv1.LabelManagedBy] == ManagedByValue:
			// An import's slice written by another mesh or installation
			// is never carried back out as if it were the Service's own.
		case es.Labels[discoveryv1.LabelServiceName] != "":
			key := types.NamespacedName{Namespace: es.Namespace, Name: es.Labels[discoveryv1.LabelServiceName]}
			s.sources[key] = append(s.sources[key], es)
		}
	}
	return s
}

// services gathers every export of the mesh by Service and merges them.
func (c *computation) services() []*service {
	byKey := map[types.NamespacedName]*service{}
	for _, cl := range c.clusters {
		for _, obj := range cl.Exports {
			if obj.DeletionTimestamp != nil {
				continue // an unexport under way is an unexport
			}
			key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
			e := &export{cluster: cl, obj: obj, svc: cl.services[key]}
			if why, denied := cl.NotGranted[obj.Namespace]; denied {
				// Neither its Service nor its endpoints are read.
				e.svc, e.valid, e.deniedWhy = nil, ExportHostNamespaceNotGranted, why
			} else {
				classify(e)
			}
			if e.valid == mcsv1beta1.ServiceExportReasonValid {
				e.groups, e.leftOut = carriedEndpoints(cl.PodCIDRs, cl.sources[key])
				for _, g := range e.groups {
					e.carried += len(g.endpoints)
				}
			}
			s := byKey[key]
			if s == nil {
				s = &service{key: key}
				byKey[key] = s
			}
			s.exports = append(s.exports, e)
		}
	}
	out := make([]*service, 0, len(byKey))
	for _, s := range byKey {
		slices.SortFunc(s.exports, olderExport)
		for _, e := range s.exports {
			if e.valid == mcsv1beta1.ServiceExportReasonValid {
				s.valid = append(s.valid, e)
			}
		}
		s.merge()
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *service) int {
		return cmp.Or(strings.Compare(a.key.Namespace, b.key.Namespace), strings.Compare(a.key.Name, b.key.Name))
	})
	return out
}

// clusterOutput is what one cluster must hold, and which of the objects
// this mesh wrote there must go: an import goes with its last valid export.
func (c *computation) clusterOutput(cl *clusterState, svcs []*service) ClusterOutput {
	out := clusterHead(cl.Cluster)
	wantImports, wantServices, wantSlices := map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}
	for _, s := range svcs {
		if len(s.valid) == 0 {
			continue
		}
		imp := c.importFor(cl, s)
		if imp.ServiceImport != nil {
			wantImports[s.key] = true
		}
		if imp.DerivedService != nil {
			wantServices[types.NamespacedName{Namespace: s.key.Namespace, Name: imp.DerivedService.Name}] = true
		}
		for _, es := range imp.EndpointSlices {
			wantSlices[types.NamespacedName{Namespace: es.Namespace, Name: es.Name}] = true
		}
		out.Imports = append(out.Imports, imp)
	}
	if cl.Yielded {
		return out // what this mesh wrote there stays, as on a cluster that does not answer
	}
	for _, imp := range cl.Imports {
		if key := (types.NamespacedName{Namespace: imp.Namespace, Name: imp.Name}); c.owned(imp.Labels) && !wantImports[key] {
			out.Delete.Imports = append(out.Delete.Imports, key)
		}
	}
	for _, svc := range cl.Services {
		if key := (types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}); c.owned(svc.Labels) && !wantServices[key] {
			out.Delete.Services = append(out.Delete.Services, key)
		}
	}
	for _, es := range cl.owned {
		if key := (types.NamespacedName{Namespace: es.Namespace, Name: es.Name}); !wantSlices[key] {
			out.Delete.EndpointSlices = append(out.Delete.EndpointSlices, key)
		}
	}
	for _, l := range [][]types.NamespacedName{out.Delete.Imports, out.Delete.Services, out.Delete.EndpointSlices} {
		slices.SortFunc(l, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	}
	return out
}

// clusterHead is what the output says of a cluster itself: a yielded
// cluster's services are not used, and its reason says why unless the
// cluster has another.
func clusterHead(cl *Cluster) ClusterOutput {
	out := ClusterOutput{Name: cl.Name, Reachable: cl.Reachable, Reason: cl.Reason, Message: cl.Message, Yielded: cl.Yielded}
	if cl.Yielded && out.Reason == "" {
		out.Reason, out.Message = BlockedClusterShared, yieldedMessage(cl.Name)
	}
	return out
}

func yieldedMessage(cluster string) string {
	return fmt.Sprintf("another ClusterMesh with multiClusterServices Enabled, created earlier, holds cluster %s too, "+
		"and a cluster belongs to one ClusterSet: this mesh writes nothing there", cluster)
}

// importFor is the import of one Service in one cluster. Nothing is
// written into a namespace that does not exist, over a ServiceImport this
// mesh did not write, or over a Service at the derived name it did not
// write.
func (c *computation) importFor(cl *clusterState, s *service) Import {
	imp := Import{Namespace: s.key.Namespace, Name: s.key.Name, Type: s.typ}
	for _, e := range s.valid {
		imp.Sources = append(imp.Sources, e.cluster.Name)
	}
	slices.Sort(imp.Sources)
	if cl.Yielded {
		imp.Blocked, imp.Message = BlockedClusterShared, yieldedMessage(cl.Name)
		return imp
	}
	if !cl.namespaces[s.key.Namespace] {
		imp.Blocked, imp.Message = BlockedNamespaceMissing, fmt.Sprintf("namespace %s does not exist in cluster %s; namespaces are never created", s.key.Namespace, cl.Name)
		return imp
	}
	if why, denied := cl.NotGranted[s.key.Namespace]; denied {
		imp.Blocked, imp.Message = BlockedHostNamespaceNotGranted, fmt.Sprintf("nothing is written into namespace %s of cluster %s: %s", s.key.Namespace, cl.Name, why)
		return imp
	}
	if have := cl.imports[s.key]; have != nil && !c.owned(have.Labels) {
		imp.Blocked, imp.Message = BlockedImportNotOwned, fmt.Sprintf("a ServiceImport %s that this mesh did not write exists in cluster %s; it is left as it is", s.key, cl.Name)
		return imp
	}
	derived := ""
	if s.typ == mcsv1beta1.ClusterSetIP {
		derived = DerivedServiceName(s.key.Namespace, s.key.Name)
		have := cl.services[types.NamespacedName{Namespace: s.key.Namespace, Name: derived}]
		if have != nil && !c.owned(have.Labels) {
			imp.Blocked, imp.Message = BlockedDerivedServiceTaken, fmt.Sprintf("a Service %s/%s that this mesh did not write holds the derived Service's name in cluster %s; it is left as it is, so the import has no IP there", s.key.Namespace, derived, cl.Name)
			imp.ServiceImport = c.serviceImport(s, derived, nil, 0, imp.Message)
			return imp
		}
		imp.DerivedService = c.derivedService(s, derived, have)
	}
	imp.EndpointSlices = c.endpointSlices(s, derived)
	for _, es := range imp.EndpointSlices {
		imp.Endpoints += len(es.Endpoints)
	}
	imp.ServiceImport = c.serviceImport(s, derived, imp.DerivedService, len(imp.EndpointSlices), staleNote(s))
	return imp
}

// staleNote says which exporting clusters' endpoints are their last known.
func staleNote(s *service) string {
	var stale []string
	for _, e := range s.valid {
		if !e.cluster.Reachable {
			stale = append(stale, e.cluster.Name)
		}
	}
	if len(stale) == 0 {
		return ""
	}
	slices.Sort(stale)
	return fmt.Sprintf("the endpoints of %s are the last known: unreachable clusters' endpoints are kept, not dropped on a guess", strings.Join(stale, ", "))
}

func sortClusters(l []mcsv1beta1.ClusterStatus) {
	slices.SortFunc(l, func(a, b mcsv1beta1.ClusterStatus) int { return strings.Compare(a.Cluster, b.Cluster) })
}

func sortSlices(l []*discoveryv1.EndpointSlice) {
	slices.SortFunc(l, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
}
