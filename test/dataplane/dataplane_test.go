//go:build dataplane

package dataplane_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/dataplane"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// RunsEnv sets how many key rotations and leader changes the test times
// (default 3); hack/dataplane-demo.sh takes more for docs/performance.md.
const RunsEnv = "KILO_MESH_DATAPLANE_RUNS"

// converge bounds how long a new mesh (or granularity) may take to carry
// every pair: Peers written, agents configured, first handshakes.
const converge = 60 * time.Second

// TestDataplane proves with packets that the Peers the server writes carry
// traffic between clusters. One bed serves every subtest, in the order of
// a mesh's life; a failed step ends the test, as later ones build on it.
func TestDataplane(t *testing.T) {
	b := dataplane.StartT(t)
	ctx := context.Background()

	steps := []struct {
		name string
		f    func(t *testing.T)
	}{
		{"two clusters carry pod traffic; the third, outside the mesh, none", func(t *testing.T) {
			if err := b.ApplyMesh(ctx, 0, 1); err != nil {
				t.Fatal(err)
			}
			connected(t, b, "2 clusters, location granularity")
			if answered := b.Unreachable(dataplane.Both(b.ClusterNodes(2), b.MeshNodes()), 2*time.Second); len(answered) > 0 {
				t.Errorf("cluster-2 is not in the mesh, yet %d pairs answered:\n%s", len(answered), dataplane.DescribeFailures(answered))
			}
		}},
		{"three clusters, location granularity: pods and services", func(t *testing.T) {
			if err := b.ApplyMesh(ctx, 0, 1, 2); err != nil {
				t.Fatal(err)
			}
			placeServices(t, b)
			connected(t, b, "3 clusters, location granularity")
		}},
		{"nodes the plan skips carry no traffic", func(t *testing.T) {
			p, err := b.Plan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range b.SkippedNodes() {
				cp := dataplane.ClusterPlan(p, n.Cluster)
				var reason string
				for _, d := range cp.Nodes {
					if d.Node == n.Name {
						reason = d.Reason
					}
				}
				if reason != string(n.Skip) {
					t.Errorf("plan: node %s has reason %q, want %q", n.Name, reason, n.Skip)
				}
			}
			if answered := b.Unreachable(b.SkippedPairs(), 3*time.Second); len(answered) > 0 {
				t.Errorf("%d pairs with a skipped node answered:\n%s", len(answered), dataplane.DescribeFailures(answered))
			}
			// Nothing else broke: the previous step ran with these nodes
			// in place; one more look after probing them.
			connected(t, b, "3 clusters, after probing the skipped nodes")
		}},
		{"traffic recovers after key rotations and leader changes", func(t *testing.T) {
			rotations, changes, err := b.Recoveries(ctx, runs(t), t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("recovery after a key rotation, %s", dataplane.RecoveryStats(rotations))
			t.Logf("recovery after a leader change, %s", dataplane.RecoveryStats(changes))
		}},
		{"full granularity: pods and services", func(t *testing.T) {
			if err := b.SetFullGranularity(ctx); err != nil {
				t.Fatal(err)
			}
			placeServices(t, b)
			connected(t, b, "3 clusters, full granularity")
		}},
		{"negative control: a cluster's Peers deleted by hand cut it off until the reconciler restores them", func(t *testing.T) {
			// The server stops first: it would restore the Peers within
			// milliseconds, before a probe could tell.
			if err := b.Server.Stop(); err != nil {
				t.Fatal(err)
			}
			n, err := b.DeleteManagedPeers(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatal("cluster-2 held no Peers of the mesh")
			}
			pairs := dataplane.Both(b.ClusterNodes(2), b.Others(2))
			err = framework.Eventually(ctx, 0, 20*time.Second, func(context.Context) error {
				if answered := b.Unreachable(pairs, 1500*time.Millisecond); len(answered) > 0 {
					return &answeredError{answered}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("cluster-2 still reachable without its %d Peers: %v", n, err)
			}
			t.Logf("without its %d Peers, cluster-2 is cut off: %d pairs unanswered", n, len(pairs))
			start := time.Now()
			if err := b.Server.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if failed := dataplane.Failed(b.Reach(ctx, pairs, converge)); len(failed) > 0 {
				t.Fatalf("after the server restored the Peers, %d pairs still fail:\n%s", len(failed), dataplane.DescribeFailures(failed))
			}
			t.Logf("the restarted server restored them: every pair answers again %s after its start", time.Since(start).Round(time.Millisecond))
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.f) {
			t.FailNow()
		}
	}
}

// runs is how many times a timed change is repeated: $KILO_MESH_DATAPLANE_RUNS, default 3.
func runs(t *testing.T) int {
	t.Helper()
	s := os.Getenv(RunsEnv)
	if s == "" {
		return 3
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", RunsEnv, s)
	}
	return n
}

type answeredError struct{ answered []dataplane.Result }

func (e *answeredError) Error() string {
	return strings.TrimSpace(dataplane.DescribeFailures(e.answered)) + " answered"
}

// connected probes every pod pair and service of the mesh, prints the
// matrices and fails on any failed pair.
func connected(t *testing.T, b *dataplane.Bed, label string) {
	t.Helper()
	matrices, failed := b.Connectivity(context.Background(), label, converge)
	for _, m := range matrices {
		t.Logf("\n%s", m)
	}
	if len(failed) > 0 {
		t.Fatalf("%d pairs failed:\n%splan:\n%s", len(failed), dataplane.DescribeFailures(failed), b.DescribePlan(context.Background()))
	}
}

// placeServices puts every cluster's service address on the anchor the
// plan names and logs where.
func placeServices(t *testing.T, b *dataplane.Bed) {
	t.Helper()
	anchors, err := b.PlaceServices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range dataplane.Clusters {
		if n := anchors[i]; n != nil {
			t.Logf("service %s of %s is on its anchor %s", dataplane.ServiceAddr(i), dataplane.ClusterName(i), n.Name)
		}
	}
}
