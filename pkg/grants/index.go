package grants

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// ErrNotSynced is returned while the grants or the namespaces have not been
// listed yet: nothing may be decided about access on half the facts.
var ErrNotSynced = errors.New("the ClusterMeshGrant and Namespace caches have not synced yet")

// Index answers coverage questions from two informers: the grants, read
// from the server's own storage, and the namespaces of the local cluster,
// whose labels namespaceSelectors match. It tells its change handlers which
// namespaces' coverage may have changed.
type Index struct {
	grants     cache.SharedIndexInformer
	namespaces cache.SharedIndexInformer
	nsLister   corelisters.NamespaceLister

	mu       sync.RWMutex
	handlers []func(namespace string)
}

// NewIndex builds the index on the two informers and registers its
// handlers; the caller runs the informers.
func NewIndex(grants, namespaces cache.SharedIndexInformer) (*Index, error) {
	x := &Index{grants: grants, namespaces: namespaces, nsLister: corelisters.NewNamespaceLister(namespaces.GetIndexer())}
	if _, err := grants.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { x.grantChanged(nil, obj) },
		UpdateFunc: x.grantChanged,
		DeleteFunc: func(obj any) { x.grantChanged(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("following ClusterMeshGrants: %w", err)
	}
	if _, err := namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: x.namespaceChanged,
	}); err != nil {
		return nil, fmt.Errorf("following Namespaces: %w", err)
	}
	return x, nil
}

// HasSynced reports whether both informers hold a complete list.
func (x *Index) HasSynced() bool { return x.grants.HasSynced() && x.namespaces.HasSynced() }

// Coverage is what the grants allow the meshes of namespace now.
func (x *Index) Coverage(namespace string) (Coverage, error) {
	if !x.HasSynced() {
		return Coverage{}, ErrNotSynced
	}
	nsLabels, err := x.labelsOf(namespace)
	if err != nil {
		return Coverage{}, err
	}
	return Evaluate(x.list(), namespace, nsLabels), nil
}

// MemberServers is what the grants add to the API server addresses the
// kubeconfigs of namespace's meshes may resolve to; none until synced.
func (x *Index) MemberServers(namespace string) []netip.Prefix {
	c, err := x.Coverage(namespace)
	if err != nil {
		return nil
	}
	return c.MemberServers
}

// AddChangeHandler calls f with every namespace whose coverage may have
// changed: those a created, changed or deleted grant covered before or
// after, and those whose labels changed.
func (x *Index) AddChangeHandler(f func(namespace string)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.handlers = append(x.handlers, f)
}

func (x *Index) list() []*meshv1alpha1.ClusterMeshGrant {
	objs := x.grants.GetStore().List()
	out := make([]*meshv1alpha1.ClusterMeshGrant, 0, len(objs))
	for _, o := range objs {
		if g, ok := o.(*meshv1alpha1.ClusterMeshGrant); ok {
			out = append(out, g)
		}
	}
	return out
}

// labelsOf reads a namespace's labels; a namespace that does not exist has
// none (its meshes are being deleted with it).
func (x *Index) labelsOf(namespace string) (map[string]string, error) {
	ns, err := x.nsLister.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s from the cache: %w", namespace, err)
	}
	return ns.Labels, nil
}

func (x *Index) grantChanged(oldObj, newObj any) {
	affected := sets.New[string]()
	for _, obj := range []any{oldObj, newObj} {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		g, ok := obj.(*meshv1alpha1.ClusterMeshGrant)
		if !ok {
			continue
		}
		affected.Insert(g.Spec.Namespaces...)
		if g.Spec.NamespaceSelector == nil {
			continue
		}
		namespaces, err := x.nsLister.List(labels.Everything())
		if err != nil {
			klog.ErrorS(err, "Listing namespaces from the cache")
			continue
		}
		for _, ns := range namespaces {
			if Covers(g, ns.Name, ns.Labels) {
				affected.Insert(ns.Name)
			}
		}
	}
	x.notify(sets.List(affected)...)
}

func (x *Index) namespaceChanged(oldObj, newObj any) {
	o, ok1 := oldObj.(*corev1.Namespace)
	n, ok2 := newObj.(*corev1.Namespace)
	if ok1 && ok2 && labels.Equals(o.Labels, n.Labels) {
		return
	}
	if ok2 {
		x.notify(n.Name)
	}
}

func (x *Index) notify(namespaces ...string) {
	x.mu.RLock()
	handlers := x.handlers
	x.mu.RUnlock()
	for _, ns := range namespaces {
		for _, f := range handlers {
			f(ns)
		}
	}
}
