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
	// byConn finds a write by the connection it went through and its Peer,
	// which is what a member cache's event tells.
	byConn map[connPeer]recentKey
}

type connPeer struct{ conn, peer string }

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
	// at is when the write was answered; conn is the connection it went
	// through.
	at   time.Time
	conn string
}

func newRecentWrites() *recentWrites {
	return &recentWrites{now: time.Now, m: map[recentKey]recentWrite{}, byConn: map[connPeer]recentKey{}}
}

// remember records a successful write. A nil recentWrites remembers
// nothing (passes that need no memory, such as a deleted mesh's removal).
func (r *recentWrites) remember(k recentKey, conn string, want *kilov1alpha1.Peer, before, after string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[k] = recentWrite{want: want, before: before, after: after, at: r.now(), conn: conn}
	r.byConn[connPeer{conn: conn, peer: k.peer}] = k
}

// echo reports whether peer, as a member cache on conn shows it, is what a
// remembered apply left (its resourceVersion is the one the apply
// answered with), with the write's key and when it was answered.
func (r *recentWrites) echo(conn string, peer *kilov1alpha1.Peer) (recentKey, time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.byConn[connPeer{conn: conn, peer: peer.Name}]
	if !ok {
		return recentKey{}, time.Time{}, false
	}
	w, ok := r.m[k]
	if !ok || w.conn != conn || w.want == nil || w.after != peer.ResourceVersion || r.now().Sub(w.at) > writeMemory {
		return recentKey{}, time.Time{}, false
	}
	return k, w.at, true
}

// dropLocked forgets the write at k.
func (r *recentWrites) dropLocked(k recentKey) {
	if w, ok := r.m[k]; ok {
		if cp := (connPeer{conn: w.conn, peer: k.peer}); r.byConn[cp] == k {
			delete(r.byConn, cp)
		}
		delete(r.m, k)
	}
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
		r.dropLocked(k)
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
			r.dropLocked(k)
		}
	}
}

// samePeer compares what an apply sets.
func samePeer(a, b *kilov1alpha1.Peer) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}
