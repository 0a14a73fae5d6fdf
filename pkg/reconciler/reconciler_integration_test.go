//go:build integration

package reconciler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

const converge = 20 * time.Second

func ready(m *meshv1alpha1.ClusterMesh) error {
	if m == nil {
		return errors.New("the mesh is gone")
	}
	c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != m.Generation {
		return fmt.Errorf("Ready = %+v", c)
	}
	return nil
}

func TestReconcileLifecycle(t *testing.T) {
	h := newHarness(t, 2)
	h.nodes(t, 0)
	h.nodes(t, 1)
	h.reconciler(t, "only", nil)
	mesh := h.createMesh(t, "life", 2)
	uid := string(mesh.UID)

	framework.EventuallyT(t, converge, "Peers as planned", func() error { return h.matchesPlan(t, mesh, 2) })
	framework.EventuallyT(t, converge, "Ready", func() error { return ready(h.mesh(t, mesh.Name)) })
	m := h.mesh(t, mesh.Name)
	if !slices.Contains(m.Finalizers, Finalizer) {
		t.Errorf("finalizers = %v", m.Finalizers)
	}
	for i, cs := range m.Status.Clusters {
		if !cs.Reachable || cs.PeersDesired != 2 || cs.PeersApplied != 2 || cs.Nodes != 3 || cs.ReadyNodes != 3 || cs.Locations != 2 {
			t.Errorf("status.clusters[%d] = %+v", i, cs)
		}
	}

	t.Run("steady state writes nothing", func(t *testing.T) {
		before := []float64{h.peerWrites(t, 0), h.peerWrites(t, 1)}
		rv := h.mesh(t, mesh.Name).ResourceVersion
		// Node updates that change nothing the plan uses still reach the
		// reconciler; they must not cause writes.
		for i := range 5 {
			if err := h.env.AnnotateNode(h.ctx, 1, "c1-a2", map[string]string{"example.com/touch": fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		after := []float64{h.peerWrites(t, 0), h.peerWrites(t, 1)}
		if !slices.Equal(before, after) {
			t.Errorf("Peer writes went from %v to %v", before, after)
		}
		if now := h.mesh(t, mesh.Name).ResourceVersion; now != rv {
			t.Errorf("the mesh was written: resourceVersion %s -> %s", rv, now)
		}
	})

	t.Run("a key change is applied", func(t *testing.T) {
		allWrites := func() float64 { return h.peerWrites(t, 0) + h.peerWrites(t, 1) }
		writesBefore, confirmedBefore := allWrites(), stageSums(t)[StageConfirmed].count
		_, key, _ := framework.NewWireGuardKey()
		if err := h.env.AnnotateNode(h.ctx, 1, "c1-a1", map[string]string{kilov1alpha1.AnnotationKey: key}); err != nil {
			t.Fatal(err)
		}
		name := planner.PeerName(h.ns, mesh.Name, clusterName(1), "location:a")
		framework.EventuallyT(t, converge, "the new key", func() error {
			p := h.peers(t, 0, uid)[name]
			if p == nil || p.Spec.PublicKey != key {
				return fmt.Errorf("Peer %s = %+v", name, p)
			}
			return nil
		})
		// The member cache's event of each write is recognised as its
		// echo (and so starts no pass of its own).
		framework.EventuallyT(t, converge, "every write confirmed by its echo", func() error {
			writes, confirmed := allWrites()-writesBefore, stageSums(t)[StageConfirmed].count-confirmedBefore
			if writes == 0 || float64(confirmed) != writes {
				return fmt.Errorf("%v Peer writes, %d confirmed", writes, confirmed)
			}
			return nil
		})
	})

	t.Run("a group that goes away is pruned", func(t *testing.T) {
		if err := h.env.Client(1, framework.UserAdmin).CoreV1().Nodes().Delete(h.ctx, "c1-b1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		name := planner.PeerName(h.ns, mesh.Name, clusterName(1), "location:b")
		framework.EventuallyT(t, converge, "the Peer deleted", func() error {
			if h.peers(t, 0, uid)[name] != nil {
				return errors.New("still there")
			}
			return nil
		})
		framework.EventuallyT(t, converge, "Peers as planned", func() error { return h.matchesPlan(t, mesh, 2) })
	})

	t.Run("a node going silent drops out without any event", func(t *testing.T) {
		// Location c's only node last checked in 50 s ago: Kilo drops it in
		// 10 s, and nothing but the clock says so.
		k := framework.KiloNode{Name: "c1-c1", Location: "c", Endpoint: "203.0.113.19:51820", InternalIP: "192.168.1.19/24",
			PodCIDR: "10.11.9.0/24", LastSeen: time.Now().Add(-50 * time.Second)}
		if _, err := h.env.CreateKiloNode(h.ctx, 1, k); err != nil {
			t.Fatal(err)
		}
		name := planner.PeerName(h.ns, mesh.Name, clusterName(1), "location:c")
		framework.EventuallyT(t, converge, "location c's Peer created", func() error {
			if h.peers(t, 0, uid)[name] == nil {
				return errors.New("not yet")
			}
			return nil
		})
		framework.EventuallyT(t, converge, "location c's Peer pruned once its node expired", func() error {
			if h.peers(t, 0, uid)[name] != nil {
				return errors.New("still there")
			}
			return nil
		})
	})

	t.Run("an edited or deleted Peer is restored", func(t *testing.T) {
		name := planner.PeerName(h.ns, mesh.Name, clusterName(0), "location:a")
		res := h.env.Dynamic(1, framework.UserAdmin).Resource(kilov1alpha1.PeerResource)
		if _, err := res.Patch(h.ctx, name, types.MergePatchType, []byte(`{"spec":{"allowedIPs":["10.99.0.0/24"],"persistentKeepalive":7}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, converge, "the edit undone", func() error { return h.matchesPlan(t, mesh, 2) })
		old := h.peers(t, 1, uid)[name]
		if err := res.Delete(h.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, converge, "the Peer back", func() error {
			if p := h.peers(t, 1, uid)[name]; p == nil || p.UID == old.UID {
				return errors.New("not back yet")
			}
			return nil
		})
	})

	t.Run("deleting the mesh removes its Peers", func(t *testing.T) {
		h.deleteMesh(t, mesh.Name)
		framework.EventuallyT(t, converge, "mesh and Peers gone", func() error {
			if h.mesh(t, mesh.Name) != nil {
				return errors.New("mesh still there")
			}
			for i := range 2 {
				if n := len(h.peers(t, i, uid)); n > 0 {
					return fmt.Errorf("cluster %d holds %d Peers", i, n)
				}
			}
			return nil
		})
		if msgs := h.events(t, mesh.Name, EventPeersRemoved); len(msgs) != 1 {
			t.Errorf("PeersRemoved events: %q", msgs)
		}
	})
}

func TestReconcileNeverTouchesForeignPeers(t *testing.T) {
	h := newHarness(t, 2)
	h.nodes(t, 0)
	keys := h.nodes(t, 1)
	const name = "owned"

	// The name the mesh wants for cluster-1's location a, on cluster 0.
	taken := h.createPeer(t, 0, &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{Name: planner.PeerName(h.ns, name, clusterName(1), "location:a")},
		Spec:       kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.200.0.0/24"}},
	})
	// A Peer left by an earlier mesh of the same name: its labels, another UID.
	stale := h.createPeer(t, 1, &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{
			Name:   planner.PeerName(h.ns, name, clusterName(0), "location:a"),
			Labels: planner.ManagedLabels(h.ns, name, "an-earlier-uid", clusterName(0)),
		},
		Spec: kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.201.0.0/24"}},
	})
	// A Peer holding the public key of cluster-1's location b leader.
	sameKey := h.createPeer(t, 0, &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"},
		Spec:       kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.202.0.0/24"}, PublicKey: keys["c1-b1"]},
	})

	h.reconciler(t, "only", nil)
	mesh := h.createMesh(t, name, 2)
	// Both of cluster-1's groups are blocked, so nothing is carried to
	// cluster 0: the mesh says so rather than reading Ready.
	framework.EventuallyT(t, converge, "NothingCarried", func() error {
		if n := len(h.peers(t, 1, string(mesh.UID))); n != 1 {
			return fmt.Errorf("cluster 1 holds %d Peers", n)
		}
		m := h.mesh(t, name)
		c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonNothingCarried || c.ObservedGeneration != m.Generation {
			return fmt.Errorf("Ready = %+v", c)
		}
		return nil
	})
	if got := len(h.peers(t, 0, string(mesh.UID))); got != 0 {
		t.Errorf("cluster 0 holds %d of the mesh's Peers; both of cluster-1's groups are in conflict", got)
	}
	if got := len(h.peers(t, 1, string(mesh.UID))); got != 1 {
		t.Errorf("cluster 1 holds %d of the mesh's Peers, want location b only", got)
	}
	framework.EventuallyT(t, converge, "conflict events", func() error {
		for _, reason := range []string{planner.ConflictNameTaken, planner.ConflictPublicKeyInUse} {
			if len(h.events(t, name, reason)) == 0 {
				return fmt.Errorf("no %s event", reason)
			}
		}
		return nil
	})

	h.deleteMesh(t, name)
	framework.EventuallyT(t, converge, "mesh gone", func() error {
		if h.mesh(t, name) != nil {
			return errors.New("still there")
		}
		return nil
	})
	for _, c := range []struct {
		cluster int
		peer    *kilov1alpha1.Peer
	}{{0, taken}, {1, stale}, {0, sameKey}} {
		p := h.peers(t, c.cluster, "")[c.peer.Name]
		if p == nil || p.ResourceVersion != c.peer.ResourceVersion {
			t.Errorf("cluster %d: foreign Peer %s changed or deleted: %+v", c.cluster, c.peer.Name, p)
		}
	}
}

func TestReconcileUnreachableCluster(t *testing.T) {
	h := newHarness(t, 2)
	h.nodes(t, 0)
	h.nodes(t, 1)
	h.reconciler(t, "only", func(o *Options) { o.MeshDeletionTimeout = 5 * time.Second })
	mesh := h.createMesh(t, "far", 2)
	uid := string(mesh.UID)
	framework.EventuallyT(t, converge, "Peers as planned", func() error { return h.matchesPlan(t, mesh, 2) })
	framework.EventuallyT(t, converge, "Ready", func() error { return ready(h.mesh(t, mesh.Name)) })
	kept := h.peers(t, 0, uid)
	onFar := h.peers(t, 1, uid)

	if err := h.env.StopCluster(1); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, converge, "ClustersReachable False", func() error {
		m := h.mesh(t, mesh.Name)
		c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionClustersReachable)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, clusterName(1)) {
			return fmt.Errorf("ClustersReachable = %+v", c)
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	for n, p := range h.peers(t, 0, uid) {
		if k := kept[n]; k == nil || k.ResourceVersion != p.ResourceVersion {
			t.Errorf("Peer %s changed while its source was unreachable", n)
		}
	}
	if len(h.peers(t, 0, uid)) != len(kept) {
		t.Errorf("Peers deleted while their source was unreachable")
	}

	if err := h.env.StartCluster(h.ctx, 1); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 2*converge, "Ready again", func() error { return ready(h.mesh(t, mesh.Name)) })

	// Deleting with cluster 1 down: cluster 0 is cleaned at once, the mesh
	// waits for cluster 1 until the timeout, then goes with a warning.
	if err := h.env.StopCluster(1); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, converge, "unreachable again", func() error {
		c := meta.FindStatusCondition(h.mesh(t, mesh.Name).Status.Conditions, meshv1alpha1.ConditionClustersReachable)
		if c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("ClustersReachable = %+v", c)
		}
		return nil
	})
	h.deleteMesh(t, mesh.Name)
	framework.EventuallyT(t, converge, "cluster 0 cleaned, waiting", func() error {
		if n := len(h.peers(t, 0, uid)); n > 0 {
			return fmt.Errorf("cluster 0 holds %d Peers", n)
		}
		m := h.mesh(t, mesh.Name)
		if m == nil {
			return nil // released already: checked below
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady); c == nil || c.Reason != ReasonRemovalBlocked {
			return fmt.Errorf("Ready = %+v", c)
		}
		return nil
	})
	framework.EventuallyT(t, converge, "released", func() error {
		if h.mesh(t, mesh.Name) != nil {
			return errors.New("still there")
		}
		return nil
	})
	msgs := h.events(t, mesh.Name, EventPeersLeftBehind)
	if len(msgs) != 1 {
		t.Fatalf("PeersLeftBehind events: %q", msgs)
	}
	for n := range onFar {
		if !strings.Contains(msgs[0], n) || !strings.Contains(msgs[0], clusterName(1)) {
			t.Errorf("the warning does not name %s on %s: %s", n, clusterName(1), msgs[0])
		}
	}
}

func TestReconcileLeaderElection(t *testing.T) {
	h := newHarness(t, 2)
	h.nodes(t, 0)
	h.nodes(t, 1)
	a, stopA := h.reconciler(t, "a", nil)
	b, stopB := h.reconciler(t, "b", nil)
	framework.EventuallyT(t, converge, "one leader", func() error {
		if a.Leading() == b.Leading() {
			return fmt.Errorf("a leading %v, b leading %v", a.Leading(), b.Leading())
		}
		return nil
	})
	leader, standby, stopLeader := a, b, stopA
	if b.Leading() {
		leader, standby, stopLeader = b, a, stopB
	}
	mesh := h.createMesh(t, "elected", 2)
	framework.EventuallyT(t, converge, "Peers as planned", func() error { return h.matchesPlan(t, mesh, 2) })
	if standby.Leading() || !leader.Leading() {
		t.Fatal("leadership moved without a failure")
	}

	stopLeader()
	framework.EventuallyT(t, converge, "the standby leading", func() error {
		if !standby.Leading() {
			return errors.New("not yet")
		}
		return nil
	})
	name := planner.PeerName(h.ns, mesh.Name, clusterName(0), "location:b")
	if err := h.env.Dynamic(1, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).Delete(h.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, converge, "the new leader restores the Peer", func() error { return h.matchesPlan(t, mesh, 2) })
}
