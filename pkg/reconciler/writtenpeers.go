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

// writtenPeers remembers the Peer writes of this replica, so that a pass
// planned from a member cache that has not yet seen them does not make them
// again. A pass that starts right after another (queued by a change that
// came during it) finds the old Peers in the cache, and may even reuse the
// plan made before the writes, since nothing has reported them yet: without
// this memory it would write every changed Peer twice.
type writtenPeers struct {
	now func() time.Time

	mu sync.Mutex
	m  map[writtenPeerKey]writtenPeer
	// byConn finds a write by the connection it went through and its Peer,
	// which is what a member cache's event tells.
	byConn map[connPeer]writtenPeerKey
	// inflight are the applies sent and not answered yet: a member cache
	// may show one before its answer arrives.
	inflight map[connPeer]*inflightWrite
	// swept is when writes older than writeMemory were last forgotten.
	swept time.Time
}

type inflightWrite struct {
	key  writtenPeerKey
	want *kilov1alpha1.Peer
	// seen: a member cache showed the write before its answer came.
	seen bool
}

type connPeer struct{ conn, peer string }

type writtenPeerKey struct {
	mesh    types.NamespacedName
	cluster string
	peer    string
}

type writtenPeer struct {
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
	// seen: a member cache showed the write (its echo).
	seen bool
}

func newWrittenPeers() *writtenPeers {
	return &writtenPeers{now: time.Now, m: map[writtenPeerKey]writtenPeer{}, byConn: map[connPeer]writtenPeerKey{}, inflight: map[connPeer]*inflightWrite{}}
}

// remember records a successful write. A nil writtenPeers remembers
// nothing (passes that need no memory, such as a deleted mesh's removal).
// It reports whether a member cache showed the write before its answer
// came (see begin).
func (r *writtenPeers) remember(k writtenPeerKey, conn string, want *kilov1alpha1.Peer, before, after string) (seenEarly bool) {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cp := connPeer{conn: conn, peer: k.peer}
	if w := r.inflight[cp]; w != nil && w.key == k {
		seenEarly = w.seen
		delete(r.inflight, cp)
	}
	r.m[k] = writtenPeer{want: want, before: before, after: after, at: r.now(), conn: conn, seen: seenEarly}
	r.byConn[cp] = k
	r.sweepLocked()
	return seenEarly
}

// sweepLocked forgets the writes older than writeMemory, at most once per
// writeMemory. A write is otherwise forgotten only when its Peer is looked
// at again, which a Peer planned unchanged never is: after a 250-cluster
// mesh's first pass, 62,000 writes (37 MB) stayed for the mesh's life.
func (r *writtenPeers) sweepLocked() {
	now := r.now()
	if now.Sub(r.swept) < writeMemory {
		return
	}
	r.swept = now
	for k, w := range r.m {
		if now.Sub(w.at) > writeMemory {
			r.dropLocked(k)
		}
	}
}

// begin records an apply about to be sent: until its answer, a Peer that
// shows exactly what it applies is its echo (the member cache's watch may
// be quicker than the answer).
func (r *writtenPeers) begin(k writtenPeerKey, conn string, want *kilov1alpha1.Peer) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight[connPeer{conn: conn, peer: k.peer}] = &inflightWrite{key: k, want: want}
}

// abandon forgets an apply that failed.
func (r *writtenPeers) abandon(k writtenPeerKey, conn string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cp := (connPeer{conn: conn, peer: k.peer}); r.inflight[cp] != nil && r.inflight[cp].key == k {
		delete(r.inflight, cp)
	}
}

// echo reports whether peer, as a member cache on conn shows it, is what a
// remembered apply left (its resourceVersion is the one the apply
// answered with), with the write's key and when it was answered; or what
// an apply not answered yet sends (answered is then zero).
func (r *writtenPeers) shows(conn string, peer *kilov1alpha1.Peer) (k writtenPeerKey, answered time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cp := connPeer{conn: conn, peer: peer.Name}
	if f := r.inflight[cp]; f != nil && samePeer(f.want, peer) {
		f.seen = true
		return f.key, time.Time{}, true
	}
	k, ok = r.byConn[cp]
	if !ok {
		return writtenPeerKey{}, time.Time{}, false
	}
	w, ok := r.m[k]
	if !ok || w.conn != conn || w.want == nil || w.after != peer.ResourceVersion || r.now().Sub(w.at) > writeMemory {
		return writtenPeerKey{}, time.Time{}, false
	}
	w.seen = true
	r.m[k] = w
	return k, w.at, true
}

// dropLocked forgets the write at k.
func (r *writtenPeers) dropLocked(k writtenPeerKey) {
	if w, ok := r.m[k]; ok {
		if cp := (connPeer{conn: w.conn, peer: k.peer}); r.byConn[cp] == k {
			delete(r.byConn, cp)
		}
		delete(r.m, k)
	}
}

// done reports whether the write of want (nil: a delete) at k was made by
// this replica within writeMemory, through conn, and nothing but that write
// happened to the Peer since: the cached Peer is the one the write replaced
// (the cache has not seen it yet; seen is false) or the one it left (seen).
// A write through another connection is not done: the entry's Secret now
// reaches another cluster, whose cache never held what was written.
func (r *writtenPeers) done(k writtenPeerKey, conn string, want, cached *kilov1alpha1.Peer) (done, seen bool) {
	if r == nil {
		return false, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked()
	w, ok := r.m[k]
	if !ok || w.conn != conn || r.now().Sub(w.at) > writeMemory {
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
	switch {
	case rv == w.after:
		return true, true
	case rv == w.before && !w.seen:
		return true, false
	}
	// A cache back at what the write replaced after it showed the write
	// (a Peer the write created, deleted since) was changed by someone
	// else: waiting out writeMemory would only delay its repair.
	return false, false
}

// forget drops what is remembered of a mesh that is gone.
func (r *writtenPeers) forget(mesh types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		if k.mesh == mesh {
			r.dropLocked(k)
		}
	}
	for cp, w := range r.inflight {
		if w.key.mesh == mesh {
			delete(r.inflight, cp)
		}
	}
}

// samePeer compares what an apply sets.
func samePeer(a, b *kilov1alpha1.Peer) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}
