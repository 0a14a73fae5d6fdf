//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// The reconciler end to end: the real server binary behind the aggregation
// layer of cluster 0, three real kube-apiservers as member clusters (cluster
// 0 local, 1 and 2 through kubeconfig Secrets), Nodes as kg leaves them. The
// subtests of TestReconciler build on each other, in the order of a mesh's
// life.

func TestReconciler(t *testing.T) {
	rc := startReconcilerEnv(t)
	ctx := context.Background()
	const name = "mesh"

	// Peers someone else owns: one unrelated Peer per cluster, and one on
	// cluster 0 holding the name the mesh wants for cluster-1's location b.
	foreign := map[int]map[string]*kilov1alpha1.Peer{}
	for i := range rcClusters {
		p := rc.createForeignPeer(t, i, "foreign", fmt.Sprintf("10.%d.0.0/24", 200+i))
		foreign[i] = map[string]*kilov1alpha1.Peer{p.Name: p}
	}
	takenName := planner.PeerName(rc.ns, name, clusterName(1), "location:b")
	taken := rc.createForeignPeer(t, 0, takenName, "10.210.0.0/24")
	foreign[0][taken.Name] = taken

	mesh := rc.createMesh(t, name)
	c := &rcTest{rc: rc, ctx: ctx, name: name, mesh: mesh, foreign: foreign, takenName: takenName}

	t.Run("Peers appear on every cluster and match the peers view", c.testPeersAppear)
	t.Run("status reports conditions and per-cluster figures", c.testStatus)
	t.Run("events name skipped nodes and conflicts", c.testEvents)
	t.Run("foreign Peers are never touched, even with the name the mesh wants", c.testForeignUntouched)
	t.Run("a node's key change moves to its Peers", c.testKeyChange)
	t.Run("a node's endpoint change moves to its Peers", c.testEndpointChange)
	t.Run("a leader change moves key and endpoint", c.testLeaderChange)
	t.Run("a node added or deleted changes its group's Peer", c.testNodeAddedDeleted)
	t.Run("a deleted managed Peer returns", c.testDeletedPeerReturns)
	t.Run("an edited managed Peer is restored", c.testEditedPeerRestored)
	t.Run("steady state writes nothing", c.testSteadyState)
	t.Run("an unreachable member keeps every Peer and the status says why", c.testUnreachable)
	t.Run("a member that comes back converges", c.testComesBack)
	t.Run("two replicas have one writer", c.testTwoReplicas)
	t.Run("metrics and readyz", c.testMetricsReadyz)
	t.Run("deleting the mesh removes its Peers and nothing else", c.testDeleteMesh)
	t.Run("deleting the mesh's namespace removes its Peers everywhere", c.testNamespaceDeletion(false))
	t.Run("deleting the mesh's namespace after its Secrets removes its Peers everywhere", c.testNamespaceDeletion(true))
	t.Run("deleting a mesh with an unreachable member waits, then releases it with a warning", c.testDeleteUnreachable)
}

// rcTest is what the subtests of TestReconciler share: the reconciler's
// environment, the mesh they follow through its life, and the Peers someone
// else owns (foreign, by cluster and name; takenName the one on cluster 0
// holding the name the mesh wants for cluster-1's location b).
type rcTest struct {
	rc        *rcEnv
	ctx       context.Context
	name      string
	mesh      *meshv1alpha1.ClusterMesh
	foreign   map[int]map[string]*kilov1alpha1.Peer
	takenName string
}
