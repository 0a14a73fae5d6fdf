//go:build integration

package reconciler

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// unsettledSeen is the real Manager, telling when a pass finds a mesh of
// at least generation gen not settled, and recording, for the first pass
// after the edit is followed, how many changes had been noted since.
type unsettledSeen struct {
	Clusters
	gen      *atomic.Int64
	followed *atomic.Bool
	noted    *atomic.Int64
	once     sync.Once
	seen     chan struct{}
	first    sync.Once
	notedAt  atomic.Int64 // -1 until that pass
}

func (u *unsettledSeen) Settled(mesh *meshv1alpha1.ClusterMesh) bool {
	if u.followed.Load() {
		u.first.Do(func() { u.notedAt.Store(u.noted.Load()) })
	}
	ok := u.Clusters.Settled(mesh)
	if g := u.gen.Load(); !ok && g > 0 && mesh.Generation >= g {
		u.once.Do(func() { close(u.seen) })
	}
	return ok
}

// TestDepartureAfterLateFollow: the reconciler's pass on an edit that
// removes an entry may run before the member connections follow the edit
// (both watch the same informer); it finds the mesh unsettled. Follow
// taking the departed connection's hold must then report the mesh changed,
// so that the departure goes on at once rather than at the settle recheck
// (5 s). The gate makes that order certain.
func TestDepartureAfterLateFollow(t *testing.T) {
	var gen, noted atomic.Int64
	var followed atomic.Bool
	probe := &unsettledSeen{gen: &gen, followed: &followed, noted: &noted, seen: make(chan struct{})}
	probe.notedAt.Store(-1)
	var followedAt time.Time
	gate := func(mesh *meshv1alpha1.ClusterMesh) {
		g := gen.Load()
		if g == 0 || mesh.Generation < g || followed.Load() {
			return
		}
		select {
		case <-probe.seen:
		case <-time.After(converge):
			t.Errorf("no pass found generation %d unsettled before the connections followed it", g)
		}
		// Follow runs right after this returns; a report before it would
		// not be the one under test.
		followedAt = time.Now()
		followed.Store(true)
	}
	h := newGatedHarness(t, 3, gate)
	for i := range 3 {
		h.nodes(t, i)
	}
	mesh := h.createMesh(t, "late-follow", 3)
	h.reconciler(t, "only", nil, func(r *Reconciler) {
		probe.Clusters = r.clusters
		r.clusters = probe
		// The change clock reads the time once per change noted, before
		// the mesh is queued for it.
		now := r.clock.now
		r.clock.now = func() time.Time {
			if followed.Load() {
				noted.Add(1)
			}
			return now()
		}
	})
	framework.EventuallyT(t, converge, "Peers as planned", func() error { return h.matchesPlan(t, mesh, 3) })
	if len(h.peers(t, 2, string(mesh.UID))) == 0 {
		t.Fatal("cluster 2 holds no Peer of the mesh before it leaves: the test proves nothing")
	}
	gen.Store(mesh.Generation + 1)
	var edited meshv1alpha1.ClusterMesh
	patch := `[{"op":"test","path":"/spec/clusters/2/name","value":"cluster-2"},{"op":"remove","path":"/spec/clusters/2"}]`
	if err := h.meshREST.Patch(types.JSONPatchType).Namespace(h.ns).Resource(meshResource).Name(mesh.Name).
		Body([]byte(patch)).Do(h.ctx).Into(&edited); err != nil {
		t.Fatalf("editing cluster-2 out: %v", err)
	}
	if edited.Generation != gen.Load() {
		t.Fatalf("the edit made generation %d, the gate waits for %d", edited.Generation, gen.Load())
	}
	awaitDepartures(t, h, mesh.Name, edited.Generation)
	t.Logf("the departure was done %s after the connections followed the edit (settle recheck %s)",
		time.Since(followedAt).Round(time.Millisecond), settleRecheck)
	if n := probe.notedAt.Load(); n <= 0 {
		t.Errorf("the first pass after the connections followed the edit was started by no change (%d noted): it waited for the settle recheck", n)
	}
	if left := h.peers(t, 2, string(mesh.UID)); len(left) > 0 {
		t.Errorf("the departed cluster holds %d Peers of the mesh", len(left))
	}
}
