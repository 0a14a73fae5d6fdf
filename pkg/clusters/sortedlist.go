package clusters

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// sortedList is an informer store's objects sorted by namespace and name,
// kept between changes: listing and sorting every Node and Peer of a
// cluster for each plan was most of a single change's planning
// time. The informer's event handler marks the keys it hears of
// (touched) before it reports the change, so a plan made after a change
// was reported reads it; list re-reads only those keys from the store.
type sortedList[T metav1.Object] struct {
	store cache.Store

	mu    sync.Mutex
	valid bool
	// items is shared with the readers of list: replaced, never modified.
	items []T
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

// list returns the store's objects sorted by namespace and name; read
// them, never modify them or the slice.
func (l *sortedList[T]) list() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.valid || len(l.dirty) > len(l.items)/4:
		// A relist, or many changes since the last plan: one sort is cheaper.
		l.items, l.valid = listByKey[T](l.store), true
		clear(l.dirty)
	case len(l.dirty) > 0:
		l.items = l.patched()
		clear(l.dirty)
	}
	return l.items
}

// patched is items with the dirty keys read again from the store.
func (l *sortedList[T]) patched() []T {
	out := slices.Clone(l.items)
	var added []T
	var removed map[int]bool
	for key := range l.dirty {
		namespace, name, _ := cache.SplitMetaNamespaceKey(key)
		i, found := slices.BinarySearchFunc(out, [2]string{namespace, name}, func(o T, k [2]string) int {
			return cmp.Or(strings.Compare(o.GetNamespace(), k[0]), strings.Compare(o.GetName(), k[1]))
		})
		item, exists, _ := l.store.GetByKey(key)
		obj, ok := item.(T)
		exists = exists && ok
		switch {
		case found && exists:
			out[i] = obj
		case found:
			if removed == nil {
				removed = map[int]bool{}
			}
			removed[i] = true
		case exists:
			added = append(added, obj)
		}
	}
	if len(removed) > 0 {
		kept := out[:0]
		for i, o := range out {
			if !removed[i] {
				kept = append(kept, o)
			}
		}
		out = kept
	}
	if len(added) > 0 {
		out = sortedByKey(append(out, added...))
	}
	return out
}
