package reconciler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// writeMemory is how long a write is remembered: the member Peer caches
// follow the writes by a watch, milliseconds behind; one that has not seen
// a write after this long is behind for another reason, and the write is
// made again.
const writeMemory = 5 * time.Second

// recentWrites remembers the Peer writes of this replica, so that a pass
// planned from a member cache that has not yet seen them does not make them
// again. A pass that starts right after another (queued by a change that
// came during it) finds the old Peers in the cache, and may even reuse the
// plan made before the writes, since nothing has reported them yet: without
// this memory it would write every changed Peer twice.
type recentWrites struct {
	now func() time.Time

	mu sync.Mutex
	m  map[recentKey]recentWrite
}

type recentKey struct {
	mesh    types.NamespacedName
	cluster string
	peer    string
}

type recentWrite struct {
	// want is what was applied; nil for a delete.
	want *kilov1alpha1.Peer
	// before is the resourceVersion of the cached Peer the write replaced
	// ("" if there was none), after the one the write left ("" for a
	// delete).
	before, after string
	at            time.Time
}

func newRecentWrites() *recentWrites {
	return &recentWrites{now: time.Now, m: map[recentKey]recentWrite{}}
}

// remember records a successful write. A nil recentWrites remembers
// nothing (passes that need no memory, such as a deleted mesh's removal).
func (r *recentWrites) remember(k recentKey, want *kilov1alpha1.Peer, before, after string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[k] = recentWrite{want: want, before: before, after: after, at: r.now()}
}

// done reports whether the write of want (nil: a delete) at k was made by
// this replica within writeMemory, and nothing but that write happened to
// the Peer since: the cached Peer is the one the write replaced (the cache
// has not seen it yet; seen is false) or the one it left (seen).
func (r *recentWrites) done(k recentKey, want, cached *kilov1alpha1.Peer) (done, seen bool) {
	if r == nil {
		return false, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.m[k]
	if !ok || r.now().Sub(w.at) > writeMemory {
		delete(r.m, k)
		return false, false
	}
	if (want == nil) != (w.want == nil) || want != nil && !samePeer(want, w.want) {
		return false, false
	}
	rv := ""
	if cached != nil {
		rv = cached.ResourceVersion
	}
	switch rv {
	case w.after:
		return true, true
	case w.before:
		return true, false
	}
	return false, false
}

// forget drops what is remembered of a mesh that is gone.
func (r *recentWrites) forget(mesh types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		if k.mesh == mesh {
			delete(r.m, k)
		}
	}
}

// samePeer compares what an apply sets.
func samePeer(a, b *kilov1alpha1.Peer) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}
