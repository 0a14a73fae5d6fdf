//go:build integration

package reconciler

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// editMidPass is the real Manager; once armed, the next pass that reads its
// mesh's members runs edit and waits until the connections have followed
// it (the departed hold taken) before it goes on with the mesh it read
// before the edit.
type editMidPass struct {
	Clusters
	mu    sync.Mutex
	armed func() error
	err   error
}

func (e *editMidPass) Members(mesh *meshv1alpha1.ClusterMesh) map[string]clusters.Member {
	out := e.Clusters.Members(mesh)
	e.mu.Lock()
	edit := e.armed
	e.armed = nil
	e.mu.Unlock()
	if edit != nil {
		err := edit()
		e.mu.Lock()
		e.err = err
		e.mu.Unlock()
	}
	return out
}

// TestDepartureSeenByAnOlderPass: an entry edited out while a pass works
// on the mesh as it was before. The connections follow the edit at once
// and hold the departed one; that pass must not judge the hold by its
// older spec, which still lists the entry (it would read as not left, the
// hold would be let go, and what the mesh wrote there would stay). The
// departure completes and the cluster holds nothing of the mesh.
func TestDepartureSeenByAnOlderPass(t *testing.T) {
	h := newHarness(t, 3)
	for i := range 3 {
		h.nodes(t, i)
	}
	mesh := h.createMesh(t, "older-pass", 3)
	uid := string(mesh.UID)
	probe := &editMidPass{}
	h.reconciler(t, "only", nil, func(r *Reconciler) {
		probe.Clusters = r.clusters
		r.clusters = probe
	})
	framework.EventuallyT(t, converge, "Peers as planned", func() error { return h.matchesPlan(t, mesh, 3) })
	if len(h.peers(t, 2, uid)) == 0 {
		t.Fatal("cluster 2 holds no Peer of the mesh before it leaves: the test proves nothing")
	}

	key := types.NamespacedName{Namespace: h.ns, Name: mesh.Name}
	var edited meshv1alpha1.ClusterMesh
	done := make(chan struct{})
	probe.mu.Lock()
	probe.armed = func() error {
		defer close(done)
		patch := `[{"op":"test","path":"/spec/clusters/2/name","value":"cluster-2"},{"op":"remove","path":"/spec/clusters/2"}]`
		if err := h.meshREST.Patch(types.JSONPatchType).Namespace(h.ns).Resource(meshResource).Name(mesh.Name).
			Body([]byte(patch)).Do(h.ctx).Into(&edited); err != nil {
			return fmt.Errorf("editing cluster-2 out: %w", err)
		}
		deadline := time.Now().Add(converge)
		for time.Now().Before(deadline) {
			for _, mb := range probe.Clusters.Held(key) {
				if mb.Entry == clusterName(2) && mb.Hold.Key.Why == clusters.HoldDeparted {
					return nil
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		return fmt.Errorf("no departed hold of %s within %s", clusterName(2), converge)
	}
	probe.mu.Unlock()
	// A change of the mesh's metadata makes a pass over its spec as it is now.
	poke := `{"metadata":{"annotations":{"test.kilo.squat.ai/poke":"1"}}}`
	if err := h.meshREST.Patch(types.MergePatchType).Namespace(h.ns).Resource(meshResource).Name(mesh.Name).
		Body([]byte(poke)).Do(h.ctx).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * converge):
		t.Fatal("no pass read the mesh's members after its annotation changed")
	}
	probe.mu.Lock()
	err := probe.err
	probe.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	awaitDepartures(t, h, mesh.Name, edited.Generation)
	if left := h.peers(t, 2, uid); len(left) > 0 {
		t.Errorf("cluster-2 holds %d Peers of the mesh after its departure completed", len(left))
	}
}
