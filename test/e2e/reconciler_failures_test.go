//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// A member cluster that becomes unreachable: while it is down, when it comes
// back, and when a mesh is deleted meanwhile. Subtests of TestReconciler.

// testUnreachable: an unreachable member keeps every Peer and the status says why.
func (c *rcTest) testUnreachable(t *testing.T) {
	before := map[int]map[string]*kilov1alpha1.Peer{}
	for _, i := range []int{0, 1} {
		all, err := c.rc.peers(t, i, "")
		if err != nil {
			t.Fatal(err)
		}
		before[i] = all
	}
	if err := c.rc.env.StopCluster(2); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 2*rcConverge, "ClustersReachable False", func() error {
		m := c.rc.mesh(t, c.name)
		if err := wantCondition(m, meshv1alpha1.ConditionClustersReachable, metav1.ConditionFalse, reconciler.ReasonUnreachable); err != nil {
			return err
		}
		if cs := m.Status.Clusters[2]; cs.Reachable || cs.LastError == "" {
			return fmt.Errorf("cluster-2 status %+v", cs)
		}
		return nil
	})
	m := c.rc.mesh(t, c.name)
	t.Logf("ClustersReachable: %s", meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionClustersReachable).Message)
	if err := wantCondition(m, meshv1alpha1.ConditionReady, metav1.ConditionFalse, reconciler.ReasonNotReady); err != nil {
		t.Error(err)
	}
	// A change between reachable clusters is still applied meanwhile.
	if err := c.rc.env.AnnotateNode(c.ctx, 0, "c0-b1", map[string]string{kilov1alpha1.AnnotationEndpoint: "198.51.100.3:51820"}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, rcConverge, "cluster-0's change on cluster 1", func() error {
		p, err := c.rc.peerOf(t, c.mesh, 1, 0, "location:b")
		if err != nil {
			return err
		}
		if e := p.Spec.Endpoint; e == nil || e.DNSOrIP.IP != "198.51.100.3" {
			return fmt.Errorf("endpoint %+v", e)
		}
		return nil
	})
	// Well past the time cluster-2's nodes would have gone stale.
	time.Sleep(10 * time.Second)
	for _, i := range []int{0, 1} {
		for pname, p := range before[i] {
			if p.Labels[planner.LabelSourceCluster] != clusterName(2) && !strings.HasPrefix(pname, "foreign") && pname != c.takenName {
				delete(before[i], pname) // representing reachable clusters: may change
			}
		}
		if err := c.rc.unchanged(t, i, before[i]); err != nil {
			t.Errorf("while cluster 2 is down: %v", err)
		}
	}
}

// testComesBack: a member that comes back converges.
func (c *rcTest) testComesBack(t *testing.T) {
	if err := c.rc.env.StartCluster(c.ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.rc.env.TouchKiloNodes(c.ctx, 2); err != nil {
		t.Fatal(err)
	}
	took := framework.EventuallyT(t, 3*rcConverge, "Ready again", func() error {
		if err := wantCondition(c.rc.mesh(t, c.name), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady); err != nil {
			return err
		}
		return c.rc.allMatchView(t, c.mesh)
	})
	t.Logf("converged %s after the restart", took.Round(time.Millisecond))
}

// testDeleteUnreachable: deleting a mesh with an unreachable member waits, then releases it with a warning.
func (c *rcTest) testDeleteUnreachable(t *testing.T) {
	const name2 = "mesh-two"
	mesh2 := c.rc.createMesh(t, name2)
	framework.EventuallyT(t, rcConverge, "Peers as the view shows", func() error { return c.rc.allMatchView(t, mesh2) })
	framework.EventuallyT(t, rcConverge, "status with applied Peers", func() error {
		return wantCondition(c.rc.mesh(t, name2), meshv1alpha1.ConditionPeersApplied, metav1.ConditionTrue, "")
	})
	left, err := c.rc.peers(t, 2, mesh2.UID)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.rc.env.StopCluster(2); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 2*rcConverge, "cluster 2 unreachable", func() error {
		return wantCondition(c.rc.mesh(t, name2), meshv1alpha1.ConditionClustersReachable, metav1.ConditionFalse, "")
	})
	deleted := time.Now()
	if err := c.rc.meshes().Delete(c.ctx, name2, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, rcConverge, "the deletion waiting for cluster-2", func() error {
		m := c.rc.mesh(t, name2)
		if err := wantCondition(m, meshv1alpha1.ConditionReady, metav1.ConditionFalse, reconciler.ReasonRemovalBlocked); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady); !strings.Contains(c.Message, clusterName(2)) {
			return fmt.Errorf("Ready does not name cluster-2: %s", c.Message)
		}
		for _, i := range []int{0, 1} {
			have, err := c.rc.peers(t, i, mesh2.UID)
			if err != nil {
				return err
			}
			if len(have) > 0 {
				return fmt.Errorf("cluster %d still holds %d Peers", i, len(have))
			}
		}
		return nil
	})
	framework.EventuallyT(t, rcDeletionTimeout+rcConverge, "the mesh released", func() error {
		if c.rc.mesh(t, name2) != nil {
			return errors.New("still there")
		}
		return nil
	})
	if waited := time.Since(deleted); waited < rcDeletionTimeout-2*time.Second {
		t.Errorf("released after %s, before --mesh-deletion-timeout=%s", waited, rcDeletionTimeout)
	}
	// The server records its events asynchronously: the warning may reach
	// the API after the mesh is gone.
	var msgs []string
	framework.EventuallyT(t, rcConverge, "the PeersLeftBehind event", func() error {
		if msgs = c.rc.events(t, name2, reconciler.EventPeersLeftBehind); len(msgs) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	if len(msgs) != 1 {
		t.Fatalf("PeersLeftBehind events: %q", msgs)
	}
	for pname := range left {
		if !strings.Contains(msgs[0], pname) {
			t.Errorf("the warning does not name %s: %s", pname, msgs[0])
		}
	}
	if !strings.Contains(msgs[0], clusterName(2)) {
		t.Errorf("the warning does not name cluster-2: %s", msgs[0])
	}

	// The Peers are indeed still on cluster 2, and removed by hand.
	if err := c.rc.env.StartCluster(c.ctx, 2); err != nil {
		t.Fatal(err)
	}
	have, err := c.rc.peers(t, 2, mesh2.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(have) != len(left) {
		t.Errorf("cluster 2 holds %d of the mesh's Peers, want the %d left behind", len(have), len(left))
	}
	if err := c.rc.dyn(2).Resource(kilov1alpha1.PeerResource).DeleteCollection(c.ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: planner.LabelMeshUID + "=" + string(mesh2.UID)}); err != nil {
		t.Fatal(err)
	}
	for i := range rcClusters {
		if err := c.rc.unchanged(t, i, c.foreign[i]); err != nil {
			t.Error(err)
		}
	}
}
