//go:build integration

package reconciler

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// laggingHolds stands for member caches of departed connections that have
// not shown the mesh's Peers yet (the watch is behind the writes of the
// pass just before the edit): Held hides them from the held connections'
// states; everything else is the real Manager.
type laggingHolds struct {
	Clusters
	hide types.UID
}

func (l laggingHolds) Held(mesh types.NamespacedName) []clusters.Member {
	out := l.Clusters.Held(mesh)
	for i := range out {
		var kept []*kilov1alpha1.Peer
		for _, p := range out[i].State.Peers.All() {
			if p.Labels[planner.LabelMeshUID] != string(l.hide) {
				kept = append(kept, p)
			}
		}
		out[i].State.Peers = chunklist.Of(kept, chunklist.ByName[*kilov1alpha1.Peer])
	}
	return out
}

// TestDepartureConfirmedOnTheCluster: an entry edited out is done leaving
// only when the departed cluster itself holds no Peer of the mesh, not
// when the cache of its connection shows none. Here that cache never shows
// them: the departure must still remove them, and DeparturesComplete must
// not be True while any is left.
func TestDepartureConfirmedOnTheCluster(t *testing.T) {
	h := newHarness(t, 3)
	for i := range 3 {
		h.nodes(t, i)
	}
	mesh := h.createMesh(t, "leaving", 3)
	uid := string(mesh.UID)
	h.reconciler(t, "only", nil, func(r *Reconciler) { r.clusters = laggingHolds{Clusters: r.clusters, hide: mesh.UID} })
	framework.EventuallyT(t, converge, "Peers as planned", func() error { return h.matchesPlan(t, mesh, 3) })
	if len(h.peers(t, 2, uid)) == 0 {
		t.Fatal("cluster 2 holds no Peer of the mesh before it leaves: the test proves nothing")
	}

	var edited meshv1alpha1.ClusterMesh
	patch := `[{"op":"test","path":"/spec/clusters/2/name","value":"cluster-2"},{"op":"remove","path":"/spec/clusters/2"}]`
	if err := h.meshREST.Patch(types.JSONPatchType).Namespace(h.ns).Resource(meshResource).Name(mesh.Name).
		Body([]byte(patch)).Do(h.ctx).Into(&edited); err != nil {
		t.Fatalf("editing cluster-2 out: %v", err)
	}
	awaitDepartures(t, h, mesh.Name, edited.Generation)
	if left := h.peers(t, 2, uid); len(left) > 0 {
		t.Errorf("DeparturesComplete is True while the departed cluster holds %d Peers of the mesh", len(left))
	}
}

// TestDeletedMidDeparture: a mesh deleted while a cluster edited out of it
// is still leaving (it does not answer) waits for that cluster like for
// its members, and once it answers removes the mesh's Peers there too
// before the mesh goes.
func TestDeletedMidDeparture(t *testing.T) {
	h := newHarness(t, 3)
	for i := range 3 {
		h.nodes(t, i)
	}
	h.reconciler(t, "only", nil)
	mesh := h.createMesh(t, "deleted-leaving", 3)
	uid := string(mesh.UID)
	framework.EventuallyT(t, converge, "Peers as planned", func() error { return h.matchesPlan(t, mesh, 3) })
	want := len(h.peers(t, 2, uid))
	if want == 0 {
		t.Fatal("cluster 2 holds no Peer of the mesh before it leaves: the test proves nothing")
	}

	if err := h.env.StopCluster(2); err != nil {
		t.Fatal(err)
	}
	started := false
	defer func() {
		if !started {
			if err := h.env.StartCluster(h.ctx, 2); err != nil {
				t.Error(err)
			}
		}
	}()
	patch := `[{"op":"test","path":"/spec/clusters/2/name","value":"cluster-2"},{"op":"remove","path":"/spec/clusters/2"}]`
	if err := h.meshREST.Patch(types.JSONPatchType).Namespace(h.ns).Resource(meshResource).Name(mesh.Name).
		Body([]byte(patch)).Do(h.ctx).Error(); err != nil {
		t.Fatalf("editing cluster-2 out: %v", err)
	}
	framework.EventuallyT(t, converge, "cluster-2 leaving", func() error {
		m := h.mesh(t, mesh.Name)
		if m == nil || len(m.Status.DepartedClusters) != 1 || m.Status.DepartedClusters[0].Reason != meshv1alpha1.DepartureRemoving {
			return fmt.Errorf("departedClusters %+v", m.Status.DepartedClusters)
		}
		return nil
	})

	h.deleteMesh(t, mesh.Name)
	framework.EventuallyT(t, converge, "the deletion waiting for the departed cluster", func() error {
		m := h.mesh(t, mesh.Name)
		if m == nil {
			return errors.New("the mesh is gone while its departed cluster still holds its Peers")
		}
		c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady)
		if c == nil || c.Reason != ReasonRemovalBlocked || !strings.Contains(c.Message, "cluster-2 (departed)") {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})

	if err := h.env.StartCluster(h.ctx, 2); err != nil {
		t.Fatal(err)
	}
	started = true
	framework.EventuallyT(t, converge, "the mesh gone, and nothing of it on the departed cluster", func() error {
		if h.mesh(t, mesh.Name) != nil {
			return errors.New("the mesh is still there")
		}
		if n := len(h.peers(t, 2, uid)); n > 0 {
			return fmt.Errorf("the departed cluster holds %d Peers of the mesh", n)
		}
		return nil
	})
}

// awaitDepartures waits until the mesh's status, at generation gen or
// later, says every departure is complete.
func awaitDepartures(t *testing.T, h *harness, name string, gen int64) {
	t.Helper()
	framework.EventuallyT(t, converge, "the departure done", func() error {
		m := h.mesh(t, name)
		if m == nil || m.Status.ObservedGeneration < gen {
			return errors.New("the edit is not observed yet")
		}
		c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionDeparturesComplete)
		if c == nil || c.Status != metav1.ConditionTrue || len(m.Status.DepartedClusters) > 0 {
			return fmt.Errorf("DeparturesComplete %+v, departedClusters %+v", c, m.Status.DepartedClusters)
		}
		return nil
	})
}
