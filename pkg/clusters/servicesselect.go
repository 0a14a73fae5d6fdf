package clusters

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
)

// reselectSpacing is the least time between two reselections: an export
// flood costs one relist a second, not one per export.
const reselectSpacing = time.Second

// exportedCaches hold the exported Services (and those at derived names)
// and the exported Services' own EndpointSlices. Neither can be selected
// by name on the server across namespaces, so they are selected thus, and
// selected again (new informers, swapped in once synced) when the set of
// exported names changes:
//   - EndpointSlices by the label kubernetes.io/service-name in (names), on
//     the server, then by namespace: the list carries exported slices only;
//   - Services by name, as they arrive: the list reads every Service once
//     per reselection, and keeps only exported and derived-name ones.
//
// So what is kept grows with exports only, and a Service exported after it
// was listed is in the cache once the next selection has synced (Synced is
// false until then: the computation never takes a missing Service for an
// absent one).
type exportedCaches struct {
	c    *cluster
	kick chan struct{}

	mu sync.Mutex
	// cur is the selection whose informers have synced; next the one
	// being synced.
	cur, next *selection_
}

// selection_ is one generation of the informers, for names.
type selection_ struct {
	names            map[types.NamespacedName]bool
	services, slices cache.SharedIndexInformer // slices nil when no names
	cancel           context.CancelFunc
}

func newExportedCaches(c *cluster) *exportedCaches {
	return &exportedCaches{c: c, kick: make(chan struct{}, 1)}
}

// reselect asks for a selection of the current exports; it never blocks.
func (x *exportedCaches) reselect() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// run keeps the selection that of names() until ctx ends.
func (x *exportedCaches) run(ctx context.Context, names func() map[types.NamespacedName]bool) {
	x.reselect()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			x.mu.Lock()
			for _, s := range []*selection_{x.cur, x.next} {
				if s != nil {
					s.cancel()
				}
			}
			x.mu.Unlock()
			return
		case <-x.kick:
		}
		pauseSince(ctx, last, reselectSpacing)
		last = time.Now()
		want := names()
		x.mu.Lock()
		same := x.cur != nil && maps.Equal(x.cur.names, want)
		x.mu.Unlock()
		if same || ctx.Err() != nil {
			continue
		}
		x.selectNames(ctx, want)
	}
}

// selectNames starts informers for names and swaps them in once synced;
// a newer reselection abandons them.
func (x *exportedCaches) selectNames(ctx context.Context, names map[types.NamespacedName]bool) {
	s, err := x.newSelection(names)
	if err != nil {
		x.c.health.streamFailed(resourceExportedServices, newError(memberaccess.ErrListWatch, "", err.Error()))
		return
	}
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	x.mu.Lock()
	if x.next != nil {
		x.next.cancel()
	}
	x.next = s
	x.mu.Unlock()
	synced := []cache.InformerSynced{s.services.HasSynced}
	for _, inf := range []cache.SharedIndexInformer{s.services, s.slices} {
		if inf != nil {
			x.c.wg.Go(func() { inf.RunWithContext(sctx) })
			synced = append(synced, inf.HasSynced)
		}
	}
	x.c.wg.Go(func() {
		if !cache.WaitForCacheSync(sctx.Done(), synced...) {
			return
		}
		x.mu.Lock()
		if x.next != s {
			x.mu.Unlock()
			return
		}
		old := x.cur
		x.cur, x.next = s, nil
		x.mu.Unlock()
		if old != nil {
			old.cancel()
		}
		x.c.opts.onChange(x.c)
	})
}

func (x *exportedCaches) newSelection(names map[types.NamespacedName]bool) (*selection_, error) {
	s := &selection_{names: names}
	c := x.c
	cl, err := c.services()
	if err != nil {
		return nil, err
	}
	keepService := func(svc *corev1.Service) bool {
		if _, written := svc.Labels[labelMeshUID]; written {
			return false // in the informer of written Services
		}
		return names[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] || isDerivedName(svc.Name)
	}
	s.services, err = c.newInformer(resourceExportedServices, &corev1.Service{},
		cl.serviceLimit(resourceExportedServices, "", keepService, c.budget, c.opts.clock))
	if err != nil {
		return nil, err
	}
	var values []string
	for n := range names {
		// A name that is no label value names no Service either.
		if len(validation.IsValidLabelValue(n.Name)) == 0 {
			values = append(values, n.Name)
		}
	}
	if len(values) == 0 {
		return s, nil
	}
	slices.Sort(values)
	req, err := labels.NewRequirement(discoveryv1.LabelServiceName, selection.In, slices.Compact(values))
	if err != nil {
		return nil, err
	}
	keepSlice := func(es *discoveryv1.EndpointSlice) bool {
		return es.Labels[discoveryv1.LabelManagedBy] != sliceManagedBy &&
			names[types.NamespacedName{Namespace: es.Namespace, Name: es.Labels[discoveryv1.LabelServiceName]}]
	}
	s.slices, err = c.newInformer(resourceExportedSlices, &discoveryv1.EndpointSlice{},
		cl.sliceLimit(resourceExportedSlices, labels.NewSelector().Add(*req).String(), keepSlice, c.budget, c.opts.clock))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// objects returns the Services and EndpointSlices of the current selection
// that names (the exports now) want, and whether the selection covers them.
func (x *exportedCaches) objects(names map[types.NamespacedName]bool) ([]*corev1.Service, []*discoveryv1.EndpointSlice, bool) {
	x.mu.Lock()
	s := x.cur
	x.mu.Unlock()
	if s == nil {
		return nil, nil, false
	}
	covered := true
	for n := range names {
		covered = covered && s.names[n]
	}
	var svcs []*corev1.Service
	for _, svc := range listByKey[*corev1.Service](s.services.GetStore()) {
		if names[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] || isDerivedName(svc.Name) {
			svcs = append(svcs, svc)
		}
	}
	var out []*discoveryv1.EndpointSlice
	if s.slices != nil {
		for _, es := range listByKey[*discoveryv1.EndpointSlice](s.slices.GetStore()) {
			if names[types.NamespacedName{Namespace: es.Namespace, Name: es.Labels[discoveryv1.LabelServiceName]}] {
				out = append(out, es)
			}
		}
	}
	return svcs, out, covered
}
