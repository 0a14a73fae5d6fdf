package reconciler

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// servicesCurrent remembers, per mesh and cluster, the imports and export
// conditions the last pass found current: the computation's objects and
// the member cache's objects they were compared with. The computation
// replaces the objects of a Service it computes again, and a member cache
// an object that changed, so one whose two sides are the same objects
// again is current without comparing them: an endpoint change compares
// one import and one export, not every one of the mesh.
type servicesCurrent struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[string]*clusterCurrent
}

// clusterCurrent is what one pass found current on one cluster.
type clusterCurrent struct {
	imports map[types.NamespacedName]currentImport
	exports map[types.NamespacedName]currentExport
}

type currentImport struct {
	want *mcsv1beta1.ServiceImport
	have []metav1.Object
}

// currentExport is an export's computed conditions (by their first
// element) and the ServiceExport that held them.
type currentExport struct {
	want *metav1.Condition
	have *mcsv1beta1.ServiceExport
}

func newServicesCurrent() *servicesCurrent {
	return &servicesCurrent{m: map[types.NamespacedName]map[string]*clusterCurrent{}}
}

func newClusterCurrent(imports, exports int) *clusterCurrent {
	return &clusterCurrent{imports: make(map[types.NamespacedName]currentImport, imports),
		exports: make(map[types.NamespacedName]currentExport, exports)}
}

// of is what the last pass of mesh found current on each cluster.
func (c *servicesCurrent) of(mesh types.NamespacedName) map[string]*clusterCurrent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[mesh]
}

// set replaces what is remembered of mesh by what this pass found: a
// cluster this pass did not look at is compared in full next time.
func (c *servicesCurrent) set(mesh types.NamespacedName, found map[string]*clusterCurrent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[mesh] = found
}

// forget drops what is remembered of a mesh that is gone.
func (c *servicesCurrent) forget(mesh types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, mesh)
}

// haveOf are the member cache's objects an import is compared with.
func (p *servicesPass) haveOf(imp *services.Import) []metav1.Object {
	have := []metav1.Object{p.imports[keyOf(imp.ServiceImport)]}
	if d := imp.DerivedService; d != nil {
		have = append(have, p.svcs[keyOf(d)])
	}
	for _, es := range imp.EndpointSlices {
		have = append(have, p.slices[keyOf(es)])
	}
	return have
}

// current reports whether the cluster holds the import as wanted, from
// what the last pass found when both sides are the objects it compared.
func (p *servicesPass) current(imp *services.Import) bool {
	key, have := keyOf(imp.ServiceImport), p.haveOf(imp)
	if k, ok := p.known.imports[key]; ok && k.want == imp.ServiceImport && slices.Equal(k.have, have) {
		p.found.imports[key] = k
		return true
	}
	if !p.importCurrent(imp) {
		return false
	}
	p.found.imports[key] = currentImport{want: imp.ServiceImport, have: have}
	return true
}

// exportConditions are the conditions to write on an export, and whether
// they differ from those it holds, from what the last pass found when both
// sides are the objects it compared.
func (p *servicesPass) exportConditions(r *services.ExportResult, have *mcsv1beta1.ServiceExport) ([]metav1.Condition, bool) {
	key := types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
	var want *metav1.Condition
	if len(r.Conditions) > 0 {
		want = &r.Conditions[0]
	}
	if k, ok := p.known.exports[key]; ok && want != nil && k.want == want && k.have == have {
		p.found.exports[key] = k
		return nil, false
	}
	conds, changed := mergeConditions(have.Status.Conditions, r.Conditions)
	if !changed && want != nil {
		p.found.exports[key] = currentExport{want: want, have: have}
	}
	return conds, changed
}
