//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// A new mesh: its Peers, status and events, and the foreign Peers it leaves
// alone; and its deletion. Subtests of TestReconciler.

// testPeersAppear: Peers appear on every cluster and match the peers view.
func (c *rcTest) testPeersAppear(t *testing.T) {
	took := framework.EventuallyT(t, rcConverge, "Peers as the view shows", func() error { return c.rc.allMatchView(t, c.mesh) })
	t.Logf("Peers on %d clusters match the view %s after the mesh was created", rcClusters, took.Round(time.Millisecond))
	for i := range rcClusters {
		have, err := c.rc.peers(t, i, c.mesh.UID)
		if err != nil {
			t.Fatal(err)
		}
		want := 4 // two groups of each of the two other clusters
		if i == 0 {
			want = 3 // cluster-1's location b: its name is taken
		}
		if len(have) != want {
			t.Errorf("cluster %d holds %d managed Peers, want %d: %v", i, len(have), want, slices.Sorted(maps.Keys(have)))
		}
	}
	p, err := c.rc.peerOf(t, c.mesh, 2, 1, "location:a")
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.PublicKey != c.rc.keys[1]["c1-a1"] || p.Spec.Endpoint == nil || p.Spec.Endpoint.DNSOrIP.IP != "203.0.113.11" {
		t.Errorf("cluster-1's location a on cluster 2 = %+v, want leader c1-a1's key and endpoint", p.Spec)
	}
	if !slices.Contains(p.Spec.AllowedIPs, "10.11.2.0/24") {
		t.Errorf("location a's Peer lacks member c1-a2's pod CIDR: %v", p.Spec.AllowedIPs)
	}
}

// testStatus: status reports conditions and per-cluster figures.
func (c *rcTest) testStatus(t *testing.T) {
	framework.EventuallyT(t, rcConverge, "Ready", func() error {
		return wantCondition(c.rc.mesh(t, c.name), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady)
	})
	m := c.rc.mesh(t, c.name)
	for _, typ := range []string{meshv1alpha1.ConditionClustersReachable, meshv1alpha1.ConditionPeersApplied, meshv1alpha1.ConditionNetworksValid} {
		if err := wantCondition(m, typ, metav1.ConditionTrue, ""); err != nil {
			t.Error(err)
		}
	}
	if m.Status.ObservedGeneration != m.Generation {
		t.Errorf("observedGeneration %d, generation %d", m.Status.ObservedGeneration, m.Generation)
	}
	if !slices.Contains(m.Finalizers, reconciler.Finalizer) {
		t.Errorf("finalizers %v lack %s", m.Finalizers, reconciler.Finalizer)
	}
	if len(m.Status.Clusters) != rcClusters {
		t.Fatalf("status.clusters = %+v", m.Status.Clusters)
	}
	for i, cs := range m.Status.Clusters {
		want := meshv1alpha1.ClusterStatus{
			Name: clusterName(i), Reachable: true, Granularity: meshv1alpha1.GranularityLocation,
			Nodes: 4, ReadyNodes: 3, Locations: 2, PeersDesired: 4, PeersApplied: 4, SkippedNodes: 1,
			SkippedByReason: []meshv1alpha1.ReasonCount{{Reason: planner.ReasonNoPodCIDR, Count: 1}},
		}
		if i == 0 {
			want.PeersDesired, want.PeersApplied = 3, 3
		}
		got, _ := json.Marshal(cs)
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) {
			t.Errorf("status.clusters[%d] =\n%s\nwant\n%s", i, got, exp)
		}
	}
}

// testEvents: events name skipped nodes and conflicts.
func (c *rcTest) testEvents(t *testing.T) {
	framework.EventuallyT(t, rcConverge, "events", func() error {
		skipped := c.rc.events(t, c.name, reconciler.EventNodesSkipped)
		if !slices.ContainsFunc(skipped, func(m string) bool { return strings.Contains(m, "(NoPodCIDR): c1-nopod") }) {
			return fmt.Errorf("no NodesSkipped event for c1-nopod: %q", skipped)
		}
		conflicts := c.rc.events(t, c.name, planner.ConflictNameTaken)
		if !slices.ContainsFunc(conflicts, func(m string) bool { return strings.Contains(m, c.takenName) }) {
			return fmt.Errorf("no %s event naming %s: %q", planner.ConflictNameTaken, c.takenName, conflicts)
		}
		return nil
	})
}

// testForeignUntouched: foreign Peers are never touched, even with the name the mesh wants.
func (c *rcTest) testForeignUntouched(t *testing.T) {
	for i := range rcClusters {
		if err := c.rc.unchanged(t, i, c.foreign[i]); err != nil {
			t.Error(err)
		}
	}
}

// testDeleteMesh: deleting the mesh removes its Peers and nothing else.
func (c *rcTest) testDeleteMesh(t *testing.T) {
	if err := c.rc.meshes().Delete(c.ctx, c.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took := framework.EventuallyT(t, rcConverge, "the mesh and its Peers gone", func() error {
		if c.rc.mesh(t, c.name) != nil {
			return errors.New("the mesh is still there")
		}
		for i := range rcClusters {
			have, err := c.rc.peers(t, i, c.mesh.UID)
			if err != nil {
				return err
			}
			if len(have) > 0 {
				return fmt.Errorf("cluster %d still holds %v", i, slices.Sorted(maps.Keys(have)))
			}
		}
		return nil
	})
	t.Logf("mesh and Peers gone %s after the delete", took.Round(time.Millisecond))
	for i := range rcClusters {
		if err := c.rc.unchanged(t, i, c.foreign[i]); err != nil {
			t.Error(err)
		}
	}
}
