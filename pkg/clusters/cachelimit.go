package clusters

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// Defaults of the limits on what the caches keep of one member cluster
// (Config.MaxNodes, MaxPeers, MaxCacheBytes).
const (
	// DefaultMaxNodes is five times the 5,000 nodes Kubernetes is tested
	// with, about 75 MB of cache at the weight of real Nodes.
	DefaultMaxNodes = 25000
	// DefaultMaxPeers leaves room for the Peers of several meshes with
	// large clusters at full granularity.
	DefaultMaxPeers = 50000
	// DefaultMaxCacheBytes is three times what 25,000 real Nodes weigh.
	DefaultMaxCacheBytes = 256 << 20
)

const (
	// pageSize is the size of each page of a list. Lists are paged by this
	// server, not left to the reflector: a page larger than asked for is
	// refused, so one answer never holds more than a page, and each page is
	// cut down to what the cache keeps before the next is read.
	pageSize = 500
	// listTimeout bounds each page of a list; a member that stalls lists
	// fails them instead of holding the informer forever.
	listTimeout = 60 * time.Second
	// overLimitRetry is how long a cluster found over a limit is not
	// listed again: finding out costs it (and this server) a full list.
	overLimitRetry = 5 * time.Minute
)

// objectLimit lists and watches one resource of one cluster for its
// informer, keeping of each object only what the cache keeps (keep), and
// counting and weighing what the cache holds. A cluster over a limit fails
// its lists with the limit's reason, and a watch that takes it over is
// ended, so that the informer relists and finds out; what the cache holds
// of it is then unused (ClusterState.Synced is false).
type objectLimit struct {
	resource string
	// maxCount is the most objects the cache holds; 0: no limit.
	maxCount int
	// tooMany is the error of a cluster with more than maxCount.
	tooMany func(seen int) *memberaccess.Error
	// budget is shared by the cluster's resources; nil: no limit.
	budget *budget
	clock  clock.PassiveClock

	// listPage reads one page; its objects are as the API server sent them.
	listPage func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, []runtime.Object, error)
	watch    func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
	// keep returns what the cache keeps of an object, and its weight.
	keep func(runtime.Object) (runtime.Object, int64)
	// newList is the list the informer gets.
	newList func(metav1.ListMeta, []runtime.Object) runtime.Object
	// heard, when set, is told of each object event a watch delivers, as
	// it arrives.
	heard func()

	mu       sync.Mutex
	weights  map[string]int64 // by name: the last list, then watch events
	total    int64
	overSeen time.Time // when a list last found the cluster over a limit
	overErr  *memberaccess.Error
}

// admit says which limit count objects of total weight break, if any, and
// charges the weight to the budget when none: a list charges what it has
// read so far, so that the lists of a namespace's clusters running at once
// see each other's.
func (l *objectLimit) admit(count int, total int64) *memberaccess.Error {
	if l.maxCount > 0 && count > l.maxCount {
		return l.tooMany(count)
	}
	if l.budget != nil {
		return l.budget.charge(l.resource, total)
	}
	return nil
}

// List reads every object page by page, from the API server's storage (a
// list from its watch cache would ignore the page size).
func (l *objectLimit) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	if !l.overSeen.IsZero() && l.clock.Since(l.overSeen) < overLimitRetry {
		err := l.overErr
		l.mu.Unlock()
		return nil, err
	}
	l.mu.Unlock()

	o.ResourceVersion, o.ResourceVersionMatch = "", ""
	o.Limit = pageSize
	var (
		listMeta metav1.ListMeta
		items    []runtime.Object
		weights  = map[string]int64{}
		total    int64
	)
	for {
		pageMeta, page, err := l.page(ctx, o)
		if err != nil {
			l.mu.Lock()
			kept := l.total
			l.mu.Unlock()
			l.setBudget(kept)
			return nil, err
		}
		if len(page) > pageSize {
			return nil, newError(memberaccess.ErrListWatch, "", fmt.Sprintf("the API server answered %d %s to a list of %d at most", len(page), l.resource, pageSize))
		}
		if listMeta.ResourceVersion == "" {
			listMeta = pageMeta
		}
		for _, obj := range page {
			kept, w := l.keep(obj)
			name := nameOf(kept)
			total += w - weights[name]
			weights[name] = w
			items = append(items, kept)
			if e := l.admit(len(weights), total); e != nil {
				l.mu.Lock()
				l.overSeen, l.overErr = l.clock.Now(), e
				kept := l.total
				l.mu.Unlock()
				l.setBudget(kept)
				return nil, e
			}
		}
		if pageMeta.Continue == "" {
			break
		}
		o.Continue = pageMeta.Continue
	}
	listMeta.Continue, listMeta.RemainingItemCount = "", nil
	l.mu.Lock()
	l.weights, l.total, l.overSeen, l.overErr = weights, total, time.Time{}, nil
	l.mu.Unlock()
	l.setBudget(total)
	return l.newList(listMeta, items), nil
}

// setBudget charges what the cache holds after a list, or after a list
// failed (what the cache held before it).
func (l *objectLimit) setBudget(total int64) {
	if l.budget != nil {
		l.budget.set(l.resource, total)
	}
}

func (l *objectLimit) page(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, []runtime.Object, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	return l.listPage(ctx, o)
}

// Watch keeps, counts and weighs what the watch delivers.
func (l *objectLimit) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.watch(ctx, o)
	if err != nil {
		return nil, err
	}
	return FilterWatch(w, l.counted), nil
}

// counted passes an event on, cut down to what the cache keeps, unless it
// takes the cluster over a limit: then it becomes an error that ends the
// watch, and the relist that follows finds the cluster over the limit. An
// error the API server sent is passed on without its text, which is the
// member's own (see sanitize).
func (l *objectLimit) counted(e watch.Event) (watch.Event, bool) {
	switch e.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		if l.heard != nil {
			l.heard()
		}
	case watch.Error:
		return memberaccess.SanitizeEvent(e), true
	default:
		return e, true
	}
	kept, w := l.keep(e.Object)
	e.Object = kept
	name := nameOf(kept)
	l.mu.Lock()
	if l.weights == nil {
		l.weights = map[string]int64{}
	}
	if e.Type == watch.Deleted {
		l.total -= l.weights[name]
		delete(l.weights, name)
	} else {
		l.total += w - l.weights[name]
		l.weights[name] = w
	}
	count, total := len(l.weights), l.total
	l.mu.Unlock()
	if e.Type == watch.Deleted {
		l.setBudget(total)
	} else {
		if over := l.admit(count, total); over != nil {
			return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410,
				Reason: metav1.StatusReasonExpired, Message: over.Message + "; relisting to count them"}}, true
		}
	}
	return e, true
}

// nameOf keys an object in objectLimit's weights: namespace and name, so
// that namespaced objects of one name in two namespaces are two objects.
func nameOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// nodeLimit reads the Nodes of a cluster, at most maxNodes of them.
func nodeLimit(nodes typedcorev1.NodeInterface, maxNodes int, b *budget, clk clock.PassiveClock) *objectLimit {
	return &objectLimit{
		resource: resourceNodes,
		maxCount: maxNodes,
		tooMany: func(seen int) *memberaccess.Error {
			return newError(memberaccess.ErrTooManyNodes, "", fmt.Sprintf("the cluster has more than %d Nodes (the server's --max-member-nodes, seen %d); its Nodes are not cached and the mesh does not use them", maxNodes, seen))
		},
		budget: b,
		clock:  clk,
		listPage: func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, []runtime.Object, error) {
			list, err := nodes.List(ctx, o)
			if err != nil {
				return metav1.ListMeta{}, nil, err
			}
			return list.ListMeta, asObjects(list.Items), nil
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return nodes.Watch(ctx, o)
		},
		keep: keepAs(slimNode),
		newList: func(m metav1.ListMeta, items []runtime.Object) runtime.Object {
			return &corev1.NodeList{ListMeta: m, Items: typedItems[corev1.Node](items)}
		},
	}
}

// peerScheme and peerCodecs decode Kilo's Peers into their type.
var (
	peerScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		utilruntime.Must(kilov1alpha1.AddToScheme(s))
		return s
	}()
	peerCodecs = serializer.NewCodecFactory(peerScheme)
)

// peerLimit reads the Peers of a cluster through client (of
// kilo.squat.ai/v1alpha1), at most maxPeers of them (0: no limit).
func peerLimit(client rest.Interface, maxPeers int, b *budget, clk clock.PassiveClock, in *interner) *objectLimit {
	params := runtime.NewParameterCodec(peerScheme)
	return &objectLimit{
		resource: resourcePeers,
		maxCount: maxPeers,
		tooMany: func(seen int) *memberaccess.Error {
			return newError(memberaccess.ErrTooManyPeers, "", fmt.Sprintf("the cluster has more than %d Peers (the server's --max-member-peers, seen %d); its Nodes and Peers are not used", maxPeers, seen))
		},
		budget: b,
		clock:  clk,
		listPage: func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, []runtime.Object, error) {
			var list kilov1alpha1.PeerList
			if err := client.Get().Resource(kilov1alpha1.PeerResource.Resource).VersionedParams(&o, params).Do(ctx).Into(&list); err != nil {
				return metav1.ListMeta{}, nil, err
			}
			return list.ListMeta, asObjects(list.Items), nil
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return client.Get().Resource(kilov1alpha1.PeerResource.Resource).VersionedParams(&o, params).Watch(ctx)
		},
		keep: keepAs(in.slimPeer),
		newList: func(m metav1.ListMeta, items []runtime.Object) runtime.Object {
			return &kilov1alpha1.PeerList{ListMeta: m, Items: typedItems[kilov1alpha1.Peer](items)}
		},
	}
}

// object is a pointer to a Kubernetes type T, as its list holds it.
type object[T any] interface {
	*T
	runtime.Object
}

// asObjects returns pointers to a list's items, for objectLimit.
func asObjects[T any, PT object[T]](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// typedItems returns the items of type T among objs, for the list the
// informer gets.
func typedItems[T any, PT object[T]](objs []runtime.Object) []T {
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if p, ok := obj.(PT); ok {
			out = append(out, *p)
		}
	}
	return out
}

// keepAs makes objectLimit.keep of slim for objects of type PT; another
// object (such as a watch's status) is kept whole, at the overhead of one.
func keepAs[PT runtime.Object](slim func(PT) (PT, int64)) func(runtime.Object) (runtime.Object, int64) {
	return func(obj runtime.Object) (runtime.Object, int64) {
		if p, ok := obj.(PT); ok {
			return slim(p)
		}
		return obj, objectOverhead
	}
}
