package clusters

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Holds keep a connection open after its mesh stopped using it, so that
// what the mesh wrote there can still be removed. A connection is open
// exactly while a followed mesh binds it (Follow) or a hold keeps it; a
// hold ends with Release or at its deadline, whichever comes first, so a
// replica that does not clean up (it does not lead) lets go by itself.

// HoldKey names one hold: the mesh whose objects are to be removed, the
// spec cluster name the connection had in it, and who holds it.
type HoldKey struct {
	Mesh  types.NamespacedName
	Entry string
	// Owner is OwnerDeparted for the holds Follow takes itself, or what
	// the caller of Hold chose.
	Owner string
}

// OwnerDeparted owns the holds Follow takes, when Config.HoldDeparted is
// set, of an entry that left its mesh: removed from spec.clusters, or
// pointed at another connection (another Secret, or its Secret's new
// content). Whether the cluster behind it changed is the holder's to
// decide, by Held.Identity.
const OwnerDeparted = "departed"

// hold is one held connection. Guarded by Manager.mu.
type hold struct {
	binding  *binding
	deadline time.Time
	timer    *time.Timer
}

// Held is what a hold keeps, as the caches hold it now.
type Held struct {
	Key HoldKey
	// Server is the API server URL of the connection ("" when it has none).
	Server string
	// Identity is the verified identity of the cluster ("" unknown).
	Identity string
	// Settled: its caches synced or it is known to be unusable.
	Settled  bool
	Deadline time.Time
	State    ClusterState
}

// Hold keeps the connection that entry key.Entry of mesh uses now (or kept
// after its Secret went away) open until Release or timeout; when none is
// open it connects anew with what the entry's Secret holds now. A
// departed hold of the same entry is never taken for it by name: it may
// keep a cluster the Secret no longer names, and its connection is shared
// only when the Secret's content resolves to it. A hold that exists
// already is left as it is.
func (m *Manager) Hold(key HoldKey, mesh *meshv1alpha1.ClusterMesh, timeout time.Duration) {
	var entry *meshv1alpha1.ClusterEntry
	for i := range mesh.Spec.Clusters {
		if mesh.Spec.Clusters[i].Name == key.Entry {
			entry = &mesh.Spec.Clusters[i]
		}
	}
	if entry == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holds[key] != nil {
		return
	}
	spec := specOf(entry)
	var conn *cluster
	if ms := m.meshes[key.Mesh]; ms != nil && ms.bindings[key.Entry] != nil && ms.bindings[key.Entry].spec == spec {
		b := ms.bindings[key.Entry]
		conn = b.cluster
		if conn == nil {
			conn = b.retained
		}
	}
	var b *binding
	if conn != nil {
		// conn is open, so taking a reference on it cannot fail.
		conn, _ = m.acquireClusterLocked(key.Mesh, conn.id, nil, nil)
		b = &binding{name: key.Entry, spec: spec, cluster: conn, since: m.cfg.Clock.Now()}
	} else {
		b = m.bindLocked(key.Mesh, key.Entry, spec)
	}
	b.held = true
	m.addHoldLocked(key, b, timeout)
}

// holdDepartedLocked takes over b's connection (its own, or the one kept
// after its Secret went away) under an OwnerDeparted hold, when holds are
// configured; b no longer references it afterwards. It reports whether
// it took it.
func (m *Manager) holdDepartedLocked(mesh types.NamespacedName, b *binding) bool {
	conn := b.cluster
	if conn == nil {
		conn = b.retained
	}
	if m.cfg.HoldDeparted <= 0 || conn == nil || b.held {
		return false
	}
	key := HoldKey{Mesh: mesh, Entry: b.name, Owner: OwnerDeparted}
	if old := m.holds[key]; old != nil {
		m.releaseHoldLocked(key, old)
	}
	if b.cluster == conn {
		b.cluster = nil
	} else {
		b.retained = nil
	}
	held := &binding{name: b.name, spec: b.spec, cluster: conn, since: m.cfg.Clock.Now(), held: true}
	m.addHoldLocked(key, held, m.cfg.HoldDeparted)
	m.log.Info("Holding the connection of a departed cluster entry", "mesh", mesh, "cluster", b.name, "connection", conn.name(), "until", m.holds[key].deadline)
	return true
}

func (m *Manager) addHoldLocked(key HoldKey, b *binding, timeout time.Duration) {
	h := &hold{binding: b, deadline: m.cfg.Clock.Now().Add(timeout)}
	h.timer = time.AfterFunc(timeout, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.holds[key] == h {
			m.releaseHoldLocked(key, h)
		}
	})
	m.holds[key] = h
}

// Release ends a hold; the connection closes unless a mesh or another hold
// keeps it.
func (m *Manager) Release(key HoldKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.holds[key]; h != nil {
		m.releaseHoldLocked(key, h)
	}
}

func (m *Manager) releaseHoldLocked(key HoldKey, h *hold) {
	h.timer.Stop()
	delete(m.holds, key)
	m.unbindLocked(key.Mesh, h.binding)
}

// Held returns the holds on connections of mesh, sorted by entry and owner.
func (m *Manager) Held(mesh types.NamespacedName) []Held {
	type ref struct {
		key      HoldKey
		conn     *cluster
		err      *memberaccess.Error
		deadline time.Time
	}
	var refs []ref
	m.mu.RLock()
	for k, h := range m.holds {
		if k.Mesh == mesh {
			refs = append(refs, ref{key: k, conn: h.binding.cluster, err: h.binding.err, deadline: h.deadline})
		}
	}
	m.mu.RUnlock()
	out := make([]Held, 0, len(refs))
	for _, r := range refs {
		h := Held{Key: r.key, Deadline: r.deadline}
		switch {
		case r.conn != nil:
			h.Server, h.Settled, h.State = r.conn.server, r.conn.settled(), r.conn.state()
			h.Identity, h.State.Connection = h.State.Identity, r.conn.name()
		case r.err != nil:
			h.Settled = r.err.Reason != memberaccess.ErrPending
			h.State = ClusterState{Reason: r.err.Reason, LastError: r.err.Error()}
		}
		h.State.Name = r.key.Entry
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b Held) int {
		return strings.Compare(a.Key.Entry+"\x00"+a.Key.Owner, b.Key.Entry+"\x00"+b.Key.Owner)
	})
	return out
}

// HeldPeerClient returns a client for the Peers of a held connection.
func (m *Manager) HeldPeerClient(key HoldKey) (PeerClient, error) {
	b, err := m.heldBinding(key)
	if err != nil {
		return nil, err
	}
	if v := b.cluster.health.view(); v.crdKnown && !v.peerCRD {
		return nil, newError(memberaccess.ErrPeerCRDMissing, "", fmt.Sprintf("cluster %q does not serve %s", key.Entry, kilov1alpha1.PeerResource))
	}
	return &peerClient{c: b.cluster}, nil
}

// heldBinding is the binding of a held connection, or why there is none.
func (m *Manager) heldBinding(key HoldKey) (binding, error) {
	m.mu.RLock()
	h := m.holds[key]
	var b binding
	if h != nil {
		b = *h.binding
	}
	m.mu.RUnlock()
	switch {
	case h == nil:
		return b, newError(memberaccess.ErrUnknownCluster, "", fmt.Sprintf("no hold on cluster %q of mesh %s", key.Entry, key.Mesh))
	case b.cluster == nil:
		return b, b.err
	}
	return b, nil
}

// heldMeshLocked reports whether a hold names mesh.
func (m *Manager) heldMeshLocked(mesh types.NamespacedName) bool {
	for k := range m.holds {
		if k.Mesh == mesh {
			return true
		}
	}
	return false
}

// HeldPeers lists, from the API server of a held connection rather than
// from its cache, at most limit Peers matching selector: the cache may not
// show yet what was written through the connection a moment ago, and a
// departure is done only when the cluster itself holds nothing.
func (m *Manager) HeldPeers(ctx context.Context, key HoldKey, selector string, limit int64) ([]*kilov1alpha1.Peer, error) {
	client, err := m.HeldPeerClient(key)
	if err != nil {
		return nil, err
	}
	p := client.(*peerClient)
	if err := p.c.live(); err != nil {
		return nil, err
	}
	list, err := p.c.peerWrite.List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: limit})
	p.observe(err)
	if err != nil {
		return nil, fmt.Errorf("listing the Peers of cluster %q: %w", key.Entry, memberaccess.Sanitize(err))
	}
	out := make([]*kilov1alpha1.Peer, 0, len(list.Items))
	for i := range list.Items {
		var peer kilov1alpha1.Peer
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &peer); err != nil {
			return nil, fmt.Errorf("converting Peer %s of cluster %q: %w", list.Items[i].GetName(), key.Entry, err)
		}
		out = append(out, &peer)
	}
	return out, nil
}

// HeldServicesClient returns the services writer of a held connection, and
// whether it reaches the local cluster (where the server writes with its
// own identity, so the caller limits itself to the namespaces the mesh may use).
func (m *Manager) HeldServicesClient(key HoldKey) (*ServicesClient, bool, error) {
	b, err := m.heldBinding(key)
	if err != nil {
		return nil, false, err
	}
	if err := b.cluster.live(); err != nil {
		return nil, false, err
	}
	sc, err := b.cluster.servicesClient()
	return sc, b.spec.local, err
}
