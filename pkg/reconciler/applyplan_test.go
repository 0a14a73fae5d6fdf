package reconciler

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// quickClusters answers at once, as hollow members and fast clusters do.
type quickClusters struct{ Clusters }

func (quickClusters) PeerClient(*meshv1alpha1.ClusterMesh, string) (clusters.PeerClient, error) {
	return quickPeers{}, nil
}

type quickPeers struct{ clusters.PeerClient }

func (quickPeers) Connection() string { return "quick" }

// TestApplyPlanTargetsAtOnce: the result of a target without writes is
// recorded while the goroutines of targets with writes record theirs. It
// crashed the server ("concurrent map writes") on members that answer
// within microseconds; run with -race to see the race itself.
func TestApplyPlanTargetsAtOnce(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	plan := &planner.Plan{DesiredPeers: map[string]planner.PeerList{}}
	states := map[string]clusters.ClusterState{}
	for i := range 400 {
		tp := meshv1alpha1.TargetPlan{Cluster: fmt.Sprintf("c%d", i), DiffState: meshv1alpha1.DiffStateComputed}
		if i%2 == 0 {
			tp.Delete = []string{"a-peer-no-longer-cached"}
		}
		plan.View.Targets = append(plan.View.Targets, tp)
		states[tp.Cluster] = clusters.ClusterState{Reachable: true, Synced: true}
	}
	r := &Reconciler{clusters: quickClusters{}, writer: newFairWriter(), recent: newRecentWrites()}
	for range 20 {
		if got := r.applyPlan(context.Background(), mesh, plan, states); len(got) != len(plan.View.Targets) {
			t.Fatalf("%d results, want one per target (%d)", len(got), len(plan.View.Targets))
		}
	}
}

func (quickPeers) Apply(_ context.Context, peer *kilov1alpha1.Peer, _ metav1.ApplyOptions) (*kilov1alpha1.Peer, error) {
	out := peer.DeepCopy()
	out.ResourceVersion = "2"
	return out, nil
}

// BenchmarkOneChangeOnATarget: a pass that writes one Peer of a target
// holding 10,000 (a node's endpoint in a 3 x 5,000 mesh of full
// granularity) works on that one, not on all of them.
func BenchmarkOneChangeOnATarget(b *testing.B) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	peers := make([]*kilov1alpha1.Peer, 10000)
	for i := range peers {
		peers[i] = &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m-c1-node-%05d", i)}}
	}
	target := &meshv1alpha1.TargetPlan{Cluster: "c0", DiffState: meshv1alpha1.DiffStateComputed,
		Update: []meshv1alpha1.PeerUpdate{{Name: peers[4321].Name, Fields: []string{"endpoint"}}}}
	work := targetWork{mesh: mesh, cluster: "c0", target: target, desired: planner.PeerListOf(peers...),
		cached: map[string]*kilov1alpha1.Peer{}, client: quickPeers{}, writer: newFairWriter()}
	for b.Loop() {
		if res := applyTarget(context.Background(), work); res.applied != 10000 || res.created != 1 {
			b.Fatalf("%d applied, %d created: want 10,000 and 1", res.applied, res.created)
		}
	}
}
