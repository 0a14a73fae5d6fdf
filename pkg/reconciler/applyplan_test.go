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

// quickPeers answers at once, as hollow members and fast clusters do.
type quickPeers struct{ clusters.PeerClient }

func (quickPeers) Connection() string { return "quick" }

// TestApplyPlanTargetsAtOnce: the results of targets without writes,
// recorded before the writes start, and those of every target written at
// once all arrive. Recording the former while the writers' goroutines ran
// crashed the server ("concurrent map writes") on members that answer
// within microseconds; run with -race.
func TestApplyPlanTargetsAtOnce(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	written := newWrittenPeers()
	for range 20 {
		results := map[string]targetResult{}
		var works []targetWork
		for i := range 400 {
			tp := &meshv1alpha1.TargetPlan{Cluster: fmt.Sprintf("c%d", i), DiffState: meshv1alpha1.DiffStateComputed}
			if i%2 != 0 {
				results[tp.Cluster] = targetResult{targetOutcome: targetOutcome{reconciled: true}}
				continue
			}
			tp.Delete = []string{"a-peer-no-longer-cached"}
			works = append(works, targetWork{mesh: mesh, cluster: tp.Cluster, target: tp, cached: map[string]*kilov1alpha1.Peer{},
				client: quickPeers{}, written: written, writer: newFairWriter()})
		}
		applyTargets(context.Background(), works, results)
		if len(results) != 400 {
			t.Fatalf("%d results, want one per target (400)", len(results))
		}
	}
}

func (quickPeers) Apply(context.Context, *kilov1alpha1.Peer, metav1.ApplyOptions) (clusters.WrittenPeer, error) {
	return clusters.WrittenPeer{ResourceVersion: "2"}, nil
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
