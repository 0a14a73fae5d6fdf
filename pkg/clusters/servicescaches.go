package clusters

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Resources of the services caches, as named in the cluster's state and
// budget.
const (
	resourceNamespaces            = "namespaces"
	resourceServiceExports        = "serviceexports"
	resourceServiceImports        = "serviceimports"
	resourceExportedServices      = "services"
	resourceWrittenServices       = "services written by meshes"
	resourceExportedSlices        = "endpointslices"
	resourceWrittenEndpointSlices = "endpointslices written by meshes"
)

var servicesResources = []string{resourceNamespaces, resourceServiceExports, resourceServiceImports,
	resourceExportedServices, resourceWrittenServices, resourceExportedSlices, resourceWrittenEndpointSlices}

// Labels by which the objects the meshes wrote are selected; pkg/planner
// and pkg/planner/services set them (this package does not import them).
const (
	labelMeshUID = "mesh.kilo.squat.ai/mesh-uid"
	// sliceManagedBy is the endpointslice.kubernetes.io/managed-by of the
	// EndpointSlices of imports (services.ManagedByValue).
	sliceManagedBy = "kilo-mesh-apiserver.mesh.kilo.squat.ai"
	// derivedPrefix and derivedNameLen make the name of a derived Service
	// (services.DerivedServiceName).
	derivedPrefix  = "derived-"
	derivedNameLen = len(derivedPrefix) + 10
)

// servicesCaches are the informers of the services resources of one
// cluster. What they keep grows with the exported Services, not with all
// Services of the cluster: Namespaces are names only, ServiceExports and
// ServiceImports are few by nature and counted, the objects meshes wrote are
// selected by label on the server, and the exported Services and their
// EndpointSlices by name (exportedCaches).
type servicesCaches struct {
	c            *cluster
	maxEndpoints int

	namespaces, exports, imports   cache.SharedIndexInformer
	writtenServices, writtenSlices cache.SharedIndexInformer
	exported                       *exportedCaches
	cancel                         context.CancelFunc

	mu       sync.Mutex
	lastGood *ServicesState // the last synced state within the limits
}

func (c *cluster) newServicesCaches() (*servicesCaches, error) {
	cl, err := c.services()
	if err != nil {
		return nil, err
	}
	b, clk := c.budget, c.opts.clock
	s := &servicesCaches{c: c, maxEndpoints: c.opts.maxEndpointsPerService}
	if s.namespaces, err = c.newInformer(resourceNamespaces, &corev1.Namespace{}, cl.namespaceLimit(b, clk)); err != nil {
		return nil, err
	}
	if s.exports, err = c.newInformer(resourceServiceExports, &mcsv1beta1.ServiceExport{}, cl.exportLimit(c.opts.maxServiceExports, b, clk)); err != nil {
		return nil, err
	}
	if s.imports, err = c.newInformer(resourceServiceImports, &mcsv1beta1.ServiceImport{}, cl.importLimit(b, clk)); err != nil {
		return nil, err
	}
	if s.writtenServices, err = c.newInformer(resourceWrittenServices, &corev1.Service{}, cl.serviceLimit(resourceWrittenServices, labelMeshUID, nil, b, clk)); err != nil {
		return nil, err
	}
	sel := discoveryv1.LabelManagedBy + "=" + sliceManagedBy
	if s.writtenSlices, err = c.newInformer(resourceWrittenEndpointSlices, &discoveryv1.EndpointSlice{}, cl.sliceLimit(resourceWrittenEndpointSlices, sel, nil, b, clk)); err != nil {
		return nil, err
	}
	s.exported = newExportedCaches(c)
	if _, err := s.exports.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.exported.reselect() },
		UpdateFunc: func(any, any) {},
		DeleteFunc: func(any) { s.exported.reselect() },
	}); err != nil {
		return nil, fmt.Errorf("serviceexports informer: %w", err)
	}
	return s, nil
}

// start runs the informers; called with c.mu held.
func (s *servicesCaches) start(parent context.Context, wg *sync.WaitGroup) {
	ctx, cancel := context.WithCancel(parent)
	s.cancel = cancel
	for _, inf := range []cache.SharedIndexInformer{s.namespaces, s.exports, s.imports, s.writtenServices, s.writtenSlices} {
		s.c.runInformerLocked(ctx, inf)
	}
	wg.Go(func() { s.exported.run(ctx, s.exportedNames) })
}

func (s *servicesCaches) stop() {
	s.cancel()
	if s.c.budget != nil {
		for _, r := range servicesResources {
			s.c.budget.set(r, 0)
		}
	}
}

// exportedNames are the namespaces and names of the cluster's ServiceExports.
func (s *servicesCaches) exportedNames() map[types.NamespacedName]bool {
	out := map[types.NamespacedName]bool{}
	for _, obj := range s.exports.GetStore().List() {
		if e, ok := obj.(*mcsv1beta1.ServiceExport); ok {
			out[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}] = true
		}
	}
	return out
}

// overLimit are the reasons for which what the caches hold is not used.
func overLimitServices(r memberaccess.Reason) bool {
	return OverLimit(r) || r == memberaccess.ErrTooManyServiceExports || r == memberaccess.ErrTooManyEndpoints
}

// state is what the caches hold now; no I/O.
func (s *servicesCaches) state(h *health) *ServicesState {
	st := &ServicesState{Watched: true}
	if e := h.streamProblem(servicesResources...); e != nil {
		st.Reason, st.LastError = e.Reason, e.Error()
		if e.Reason == memberaccess.ErrForbidden {
			st.Reason, st.LastError = memberaccess.ErrServicesForbidden, servicesForbiddenText(e)
		}
	}
	names := s.exportedNames()
	svcs, slices_, covered := s.exported.objects(names)
	st.Synced = covered && s.namespaces.HasSynced() && s.exports.HasSynced() && s.imports.HasSynced() &&
		s.writtenServices.HasSynced() && s.writtenSlices.HasSynced()
	if st.Reason == "" {
		if e := s.endpointsOverLimit(slices_); e != nil {
			st.Reason, st.LastError = e.Reason, e.Error()
		}
	}
	if overLimitServices(st.Reason) || st.Reason == memberaccess.ErrServicesForbidden {
		// Kept as last known, and not Synced: a refusal says nothing of
		// what the cluster holds, and nothing is written there.
		return s.lastKnown(st)
	}
	for _, ns := range listByKey[*corev1.Namespace](s.namespaces.GetStore()) {
		st.Namespaces = append(st.Namespaces, ns.Name)
	}
	st.Exports = listByKey[*mcsv1beta1.ServiceExport](s.exports.GetStore())
	st.Imports = listByKey[*mcsv1beta1.ServiceImport](s.imports.GetStore())
	st.Services = sortedByKey(append(listByKey[*corev1.Service](s.writtenServices.GetStore()), svcs...))
	st.EndpointSlices = sortedByKey(append(listByKey[*discoveryv1.EndpointSlice](s.writtenSlices.GetStore()), slices_...))
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.Synced {
		if s.lastGood == nil {
			st.Since = s.c.opts.clock.Now()
		} else {
			st.Since = s.lastGood.Since
		}
		s.lastGood = st
	}
	return st
}

// lastKnown is what a cluster over a limit reports: the objects of its
// last usable state, not Synced, with the reason.
func (s *servicesCaches) lastKnown(st *ServicesState) *ServicesState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastGood != nil {
		kept := *s.lastGood
		st.Since, st.Namespaces, st.Exports, st.Imports, st.Services, st.EndpointSlices =
			kept.Since, kept.Namespaces, kept.Exports, kept.Imports, kept.Services, kept.EndpointSlices
	}
	st.Synced = false
	return st
}

// endpointsOverLimit says whether an exported Service has more endpoints
// than the server takes.
func (s *servicesCaches) endpointsOverLimit(slices_ []*discoveryv1.EndpointSlice) *memberaccess.Error {
	if s.maxEndpoints <= 0 {
		return nil
	}
	counts := map[types.NamespacedName]int{}
	for _, es := range slices_ {
		key := types.NamespacedName{Namespace: es.Namespace, Name: es.Labels[discoveryv1.LabelServiceName]}
		if counts[key] += len(es.Endpoints); counts[key] > s.maxEndpoints {
			// The message names no Service: the view and the export say which.
			return newError(memberaccess.ErrTooManyEndpoints, "", fmt.Sprintf("an exported Service of the cluster has more than %d endpoints "+
				"(the server's --max-endpoints-per-service, seen %d); the cluster's services are not used, and what the mesh imported from it is kept as last known",
				s.maxEndpoints, counts[key]))
		}
	}
	return nil
}

// servicesForbiddenText says why a cluster whose credentials are refused a
// services resource is not used: its identity lacks the services rights
// (pkg/member). e's text is the server's own, never the answer's.
func servicesForbiddenText(e *memberaccess.Error) string {
	return e.Message + ": the identity lacks its services rights, so the cluster's services are not used and nothing is written or deleted there"
}

// isDerivedName reports whether name has the form of a derived Service's.
func isDerivedName(name string) bool {
	return len(name) == derivedNameLen && strings.HasPrefix(name, derivedPrefix)
}

// listByKey returns the objects of a store sorted by namespace and name.
func listByKey[T metav1.Object](store cache.Store) []T {
	items := store.List()
	out := make([]T, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(T); ok {
			out = append(out, obj)
		}
	}
	return sortedByKey(out)
}

func sortedByKey[T metav1.Object](objs []T) []T {
	slices.SortFunc(objs, func(a, b T) int {
		return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
	})
	return objs
}
