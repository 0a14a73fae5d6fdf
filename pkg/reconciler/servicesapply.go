package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// servicesPass writes one cluster's services objects for one pass: it
// compares what the computation wants with what the cache holds and
// writes only the differences, so a mesh at rest writes nothing.
type servicesPass struct {
	ctx       context.Context
	mesh      *meshv1alpha1.ClusterMesh
	out       *services.ClusterOutput
	exports   []services.ExportResult
	client    *clusters.ServicesClient
	deletions bool
	// written remembers the writes' answers, whose echoes start no pass.
	written *writtenServices
	// known is what the last pass found current on the cluster, found
	// what this one does (servicescurrent.go).
	known, found *clusterCurrent

	imports map[types.NamespacedName]*mcsv1beta1.ServiceImport
	svcs    map[types.NamespacedName]*corev1.Service
	slices  map[types.NamespacedName]*discoveryv1.EndpointSlice
	exps    map[types.NamespacedName]*mcsv1beta1.ServiceExport

	mu                        sync.Mutex
	created, updated, deleted int
	errs                      []string
	unseen                    bool
}

func newServicesPass(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, out *services.ClusterOutput, exports []services.ExportResult,
	have *clusters.ServicesState, client *clusters.ServicesClient, deletions bool) *servicesPass {
	return &servicesPass{ctx: ctx, mesh: mesh, out: out, exports: exports, client: client, deletions: deletions,
		imports: byKey(have.Imports), svcs: byKey(have.Services), slices: byKey(have.EndpointSlices), exps: byKey(have.Exports),
		known: newClusterCurrent(0, 0), found: newClusterCurrent(len(out.Imports), len(exports))}
}

// run submits the writes that differ to the fair writer and waits for them.
func (p *servicesPass) run(w *fairWriter, mesh types.NamespacedName) *servicesPass {
	var jobs []func()
	for i := range p.out.Imports {
		imp := &p.out.Imports[i]
		if imp.ServiceImport != nil && !p.current(imp) {
			jobs = append(jobs, func() { p.applyImport(imp) })
		}
	}
	if p.deletions {
		for _, k := range p.out.Delete.EndpointSlices {
			if es := p.slices[k]; es != nil && p.owned(es) {
				jobs = append(jobs, func() { p.delete(p.client.Kube.DiscoveryV1().EndpointSlices(k.Namespace).Delete, "EndpointSlice", es) })
			}
		}
		for _, k := range p.out.Delete.Services {
			if svc := p.svcs[k]; svc != nil && p.owned(svc) {
				jobs = append(jobs, func() { p.delete(p.client.Kube.CoreV1().Services(k.Namespace).Delete, "Service", svc) })
			}
		}
		for _, k := range p.out.Delete.Imports {
			if si := p.imports[k]; si != nil && p.owned(si) {
				jobs = append(jobs, func() {
					p.delete(p.client.MCS.MulticlusterV1beta1().ServiceImports(k.Namespace).Delete, "ServiceImport", si)
				})
			}
		}
	}
	for i := range p.exports {
		r := &p.exports[i]
		have := p.exps[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}]
		if have == nil {
			continue
		}
		if conds, changed := p.exportConditions(r, have); changed {
			jobs = append(jobs, func() { p.exportStatus(have, conds) })
		}
	}
	var wg sync.WaitGroup
	for _, job := range jobs {
		wg.Add(1)
		w.submit(p.client.Connection, mesh, func() {
			defer wg.Done()
			job()
		})
	}
	wg.Wait()
	return p
}

func (p *servicesPass) writes() int { return p.created + p.updated + p.deleted }

// owned reports whether an object carries this mesh's labels: no other
// object is ever updated or deleted.
func (p *servicesPass) owned(o metav1.Object) bool {
	return planner.LabelsManagedBy(o.GetLabels(), p.mesh.Namespace, p.mesh.Name, p.mesh.UID)
}

// done records the outcome of one write: a conflict, an object already
// there or already gone means the cache was behind, not a failure. The
// answer of a write of kind is remembered (kind "": not), so that its echo
// starts no pass.
func (p *servicesPass) done(counter *int, what string, obj metav1.Object, err error, kind string, answer metav1.Object) bool {
	if err == nil && kind != "" && answer != nil && p.written != nil {
		p.written.remember(p.client.Connection, kind, types.NamespacedName{Namespace: p.mesh.Namespace, Name: p.mesh.Name}, answer)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		*counter++
		return true
	case apierrors.IsConflict(err), errors.Is(err, errStale), apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err):
		p.unseen = true
	default:
		p.errs = append(p.errs, fmt.Sprintf("%s %s/%s: %s", what, obj.GetNamespace(), obj.GetName(), writeErrorText(err)))
	}
	return false
}

// errStale is an object changed since the cache read it: the cache is
// behind, as on a conflict.
var errStale = errors.New("changed since the cache read it")

// updateLive updates the object the cache holds as have. The cache's copy
// lacks what other writers own (finalizers, kubectl's last-applied copy), so
// the object is read whole, set sets only what the mesh owns, and the update
// carries the resourceVersion the cache read: the object changed since is
// errStale, and one changed between the read and the update a conflict.
// A read and an update, not a patch: the member identity has no patch.
func updateLive[T metav1.Object](ctx context.Context, get func(context.Context, string, metav1.GetOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error), have T, set func(T)) (T, error) {
	live, err := get(ctx, have.GetName(), metav1.GetOptions{})
	if err == nil && live.GetResourceVersion() != have.GetResourceVersion() {
		err = errStale
	}
	if err != nil {
		var none T
		return none, err
	}
	set(live)
	return update(ctx, live, metav1.UpdateOptions{FieldManager: FieldManager})
}

func (p *servicesPass) delete(del func(context.Context, string, metav1.DeleteOptions) error, what string, obj metav1.Object) {
	err := del(p.ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(obj.GetUID())}})
	p.done(&p.deleted, what, obj, err, "", nil)
}

// exportStatus writes an export's conditions through its status.
func (p *servicesPass) exportStatus(have *mcsv1beta1.ServiceExport, conds []metav1.Condition) {
	obj := have.DeepCopy()
	obj.Status.Conditions = conds
	answer, err := p.client.MCS.MulticlusterV1beta1().ServiceExports(obj.Namespace).UpdateStatus(p.ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
	p.done(&p.updated, "ServiceExport status", obj, err, "ServiceExport", answer)
}

// applyImport writes an import's ServiceImport, then its derived Service
// (owned by the ServiceImport, so the garbage collector removes it with
// it), then its EndpointSlices.
func (p *servicesPass) applyImport(imp *services.Import) {
	imports := p.client.MCS.MulticlusterV1beta1().ServiceImports(imp.Namespace)
	want := imp.ServiceImport
	si := p.imports[keyOf(want)]
	switch {
	case si == nil:
		created, err := imports.Create(p.ctx, &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: want.Namespace, Name: want.Name,
			Labels: want.Labels, Annotations: want.Annotations}, Spec: want.Spec}, metav1.CreateOptions{FieldManager: FieldManager})
		if !p.done(&p.created, "ServiceImport", want, err, "ServiceImport", created) {
			return
		}
		si = created
	case !importSpecCurrent(want, si):
		updated, err := updateLive(p.ctx, imports.Get, imports.Update, si, func(obj *mcsv1beta1.ServiceImport) {
			obj.Labels, obj.Annotations, obj.Spec = importLabels(obj, want), importAnnotations(obj.Annotations, want.Annotations), want.Spec
		})
		if !p.done(&p.updated, "ServiceImport", want, err, "ServiceImport", updated) {
			return
		}
		si = updated
	}
	if status, changed := importStatus(si, want); changed {
		obj := si.DeepCopy()
		obj.Status = status
		updated, err := imports.UpdateStatus(p.ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
		if !p.done(&p.updated, "ServiceImport status", want, err, "ServiceImport", updated) {
			return
		}
		si = updated
	}
	if d := imp.DerivedService; d != nil && !p.applyDerived(withOwner(d, si)) {
		return
	}
	for _, es := range imp.EndpointSlices {
		p.applySlice(es)
	}
}

func (p *servicesPass) applyDerived(want *corev1.Service) bool {
	svcs := p.client.Kube.CoreV1().Services(want.Namespace)
	have := p.svcs[keyOf(want)]
	switch {
	case have == nil:
		// Not remembered: its echo carries the cluster IPs the import needs.
		_, err := svcs.Create(p.ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
		return p.done(&p.created, "Service", want, err, "", nil)
	case derivedCurrent(want, have):
		return true
	case !p.owned(have):
		return false // the computation blocks such an import; never overwritten
	}
	answer, err := updateLive(p.ctx, svcs.Get, svcs.Update, have, func(obj *corev1.Service) {
		obj.Labels, obj.OwnerReferences = mergedMap(obj.Labels, want.Labels), mergedOwners(obj.OwnerReferences, want.OwnerReferences)
		clusterIP, clusterIPs := obj.Spec.ClusterIP, obj.Spec.ClusterIPs
		obj.Spec = want.Spec
		obj.Spec.ClusterIP, obj.Spec.ClusterIPs = clusterIP, clusterIPs // allocated, immutable
	})
	return p.done(&p.updated, "Service", want, err, "Service", answer)
}

func (p *servicesPass) applySlice(want *discoveryv1.EndpointSlice) {
	slices := p.client.Kube.DiscoveryV1().EndpointSlices(want.Namespace)
	have := p.slices[keyOf(want)]
	switch {
	case have != nil && sliceCurrent(want, have):
		return
	case have != nil && p.owned(have) && have.AddressType == want.AddressType:
		answer, err := updateLive(p.ctx, slices.Get, slices.Update, have, func(obj *discoveryv1.EndpointSlice) {
			obj.Labels, obj.Ports, obj.Endpoints = mergedMap(obj.Labels, want.Labels), want.Ports, want.Endpoints
		})
		p.done(&p.updated, "EndpointSlice", want, err, "EndpointSlice", answer)
		return
	case have != nil:
		return // another writer's, or of another address type (names include it)
	}
	answer, err := slices.Create(p.ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
	p.done(&p.created, "EndpointSlice", want, err, "EndpointSlice", answer)
}

func byKey[T metav1.Object](objs []T) map[types.NamespacedName]T {
	m := make(map[types.NamespacedName]T, len(objs))
	for _, o := range objs {
		m[types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}] = o
	}
	return m
}
