package clusters

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Holds are the one way a connection stays open once no entry of a mesh
// uses it any more, so that what the mesh wrote there can still be
// removed: an entry that left (HoldDeparted), a deleted mesh
// (HoldDeleted), an entry whose Secret went away (HoldSecretGone). The
// Manager takes them itself as the meshes change, for as long as KeepFor
// says; the caller ends them with Release once its work there is done. A
// replica that does not clean up (it does not lead) lets go at the
// deadline. A connection is open exactly while a followed mesh binds it or
// a hold keeps it.

// Why a connection is held (HoldKey.Why).
const (
	// HoldDeparted: the entry left its mesh, removed from spec.clusters or
	// pointed at another connection (another Secret, or its Secret's new
	// content). Whether the cluster behind it changed is the holder's to
	// decide, by its identity.
	HoldDeparted = "departed"
	// HoldDeleted: the mesh was deleted (it left the informer).
	HoldDeleted = "deleted"
	// HoldSecretGone: the entry's Secret went away while the mesh was
	// followed: deleting a namespace deletes the Secrets and the mesh
	// together, in no set order, and the deleted mesh still needs the
	// connection. It has no deadline while the mesh is followed, and
	// becomes a departed or deleted hold when the entry or the mesh goes.
	HoldSecretGone = "secret-gone"
)

// HoldKey names one hold: the mesh (and its UID) whose objects are to be
// removed, the spec cluster name the connection had in it, and why it is
// held.
type HoldKey struct {
	Mesh  types.NamespacedName
	UID   types.UID
	Entry string
	Why   string
}

// holds owns the held connections. Guarded by Manager.mu.
type holds struct {
	byKey map[HoldKey]*hold
	// keepFor is how long a departed or deleted connection is held; 0:
	// none is, it closes at once.
	keepFor time.Duration
}

// hold is one held connection: a reference on conn under the mesh's key.
type hold struct {
	conn     *cluster
	local    bool
	deadline time.Time // zero: none
	timer    *time.Timer
}

// KeepFor sets how long the connection of a departed entry or a deleted
// mesh is held, at most (the cleaner says, for its own deadlines); 0, the
// default, holds none. Holds taken before keep theirs.
func (m *Manager) KeepFor(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holds.keepFor = d
}

// holdLocked moves a reference on conn, taken under key.Mesh, into a hold
// at key: for keepFor when timed, else until released. A hold at key
// before is released first. It reports whether it took conn; if not, the
// caller still owns the reference.
func (m *Manager) holdLocked(key HoldKey, conn *cluster, local, timed bool) bool {
	if timed && m.holds.keepFor <= 0 {
		return false
	}
	if old := m.holds.byKey[key]; old != nil {
		m.releaseHoldLocked(key, old)
	}
	h := &hold{conn: conn, local: local}
	if timed {
		h.deadline = m.cfg.Clock.Now().Add(m.holds.keepFor)
		h.timer = time.AfterFunc(m.holds.keepFor, func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.holds.byKey[key] == h {
				m.releaseHoldLocked(key, h)
			}
		})
	}
	m.holds.byKey[key] = h
	m.log.V(2).Info("Holding a member connection", "mesh", key.Mesh, "cluster", key.Entry, "why", key.Why, "connection", conn.name(), "until", h.deadline)
	return true
}

// leaveLocked hands the connection of b, an entry of mesh that stops
// using it, over to a hold of why, or drops the reference when nothing is
// held. The connection its Secret last named goes the same way.
func (m *Manager) leaveLocked(mesh types.NamespacedName, b *binding, why string) {
	gone := b.secretGone(mesh)
	conn := b.cluster
	if h := m.holds.byKey[gone]; h != nil && conn == nil {
		// The entry's connection is the one its Secret last named.
		delete(m.holds.byKey, gone)
		conn = h.conn
	}
	b.cluster = nil
	if conn != nil && !m.holdLocked(HoldKey{Mesh: mesh, UID: b.uid, Entry: b.name, Why: why}, conn, b.spec.local, true) {
		m.releaseClusterLocked(mesh, conn)
	}
	if h := m.holds.byKey[gone]; h != nil {
		m.releaseHoldLocked(gone, h)
	}
}

// Release ends a hold; the connection closes unless a mesh or another hold
// keeps it.
func (m *Manager) Release(key HoldKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.holds.byKey[key]; h != nil {
		m.releaseHoldLocked(key, h)
	}
}

func (m *Manager) releaseHoldLocked(key HoldKey, h *hold) {
	if h.timer != nil {
		h.timer.Stop()
	}
	delete(m.holds.byKey, key)
	m.releaseClusterLocked(key.Mesh, h.conn)
}

// Held returns the connections held for mesh, departed and deleted ones
// (a secret-gone one is its entry's Member), sorted by entry and why.
func (m *Manager) Held(mesh types.NamespacedName) []Member {
	type ref struct {
		key HoldKey
		h   hold
	}
	var refs []ref
	m.mu.RLock()
	for k, h := range m.holds.byKey {
		if k.Mesh == mesh && k.Why != HoldSecretGone {
			refs = append(refs, ref{key: k, h: *h})
		}
	}
	m.mu.RUnlock()
	out := make([]Member, 0, len(refs))
	for _, r := range refs {
		key, deadline := r.key, r.h.deadline
		out = append(out, newMember(r.key.Entry, r.h.local, r.h.conn, nil, &HeldFor{Key: key, Deadline: deadline}))
	}
	slices.SortFunc(out, func(a, b Member) int {
		return strings.Compare(a.Entry+"\x00"+a.Hold.Key.Why, b.Entry+"\x00"+b.Hold.Key.Why)
	})
	return out
}

// heldMeshLocked reports whether a hold names mesh.
func (m *Manager) heldMeshLocked(mesh types.NamespacedName) bool {
	for k := range m.holds.byKey {
		if k.Mesh == mesh {
			return true
		}
	}
	return false
}
