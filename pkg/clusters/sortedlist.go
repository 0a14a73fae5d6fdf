package clusters

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
)

// sortedList is an informer store's cluster-scoped objects sorted by name,
// kept between changes in a chunklist.List: each version shares every chunk
// no change reached with the last, so a plan after a change copies and
// compares a chunk per change, not every Node and Peer of the mesh (under
// Kilo's check-in stream every cache changes between two plans). The
// informer's event handler marks the keys it hears of (touched) before it
// reports the change, so a plan made after a change was reported reads it;
// list re-reads only those keys from the store.
type sortedList[T metav1.Object] struct {
	store cache.Store

	mu    sync.Mutex
	valid bool
	items chunklist.List[T]
	dirty map[string]struct{}
}

func newSortedList[T metav1.Object]() *sortedList[T] {
	return &sortedList[T]{dirty: map[string]struct{}{}}
}

// touched marks the key of obj (an object or a deletion marker) as
// possibly changed in the store.
func (l *sortedList[T]) touched(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.valid = false
	case l.valid:
		l.dirty[key] = struct{}{}
	}
}

// list returns the store's objects sorted by name; read them, never modify
// them.
func (l *sortedList[T]) list() chunklist.List[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.valid || len(l.dirty) > l.items.Len()/4:
		// A relist, or many changes since the last plan: one sort is cheaper.
		// Cluster-scoped: sorted by namespace and name is sorted by name.
		l.items, l.valid = chunklist.Of(listByKey[T](l.store), chunklist.ByName[T]), true
		clear(l.dirty)
	case len(l.dirty) > 0:
		l.items = l.reread()
		clear(l.dirty)
	}
	return l.items
}

// reread is items with the dirty keys read again from the store: updates
// in one step, which copies each chunk they reach once, then additions and
// deletions one by one.
func (l *sortedList[T]) reread() chunklist.List[T] {
	var present []T
	var gone []string
	for key := range l.dirty {
		item, exists, _ := l.store.GetByKey(key)
		if obj, ok := item.(T); exists && ok {
			present = append(present, obj)
			continue
		}
		_, name, _ := cache.SplitMetaNamespaceKey(key)
		gone = append(gone, name)
	}
	items, added := l.items.Replace(present, chunklist.ByName[T])
	for _, obj := range added {
		items = items.With(obj, chunklist.ByName[T])
	}
	for _, name := range gone {
		items, _ = items.Without(name, chunklist.ByName[T])
	}
	return items
}
