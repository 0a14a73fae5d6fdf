package reconciler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

func TestMayHoldPeers(t *testing.T) {
	mesh := testMesh()
	mesh.UID = "uid-1"
	ours := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: planner.ManagedLabels("ns", "m", "uid-1", "eu")}}
	earlier := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "q", Labels: planner.ManagedLabels("ns", "m", "uid-0", "eu")}}
	withApplied := func(n int32) *meshv1alpha1.ClusterMesh {
		m := mesh.DeepCopy()
		m.Status.Clusters = []meshv1alpha1.ClusterStatus{{Name: "us", PeersApplied: n}}
		return m
	}
	for _, c := range []struct {
		name string
		mesh *meshv1alpha1.ClusterMesh
		st   clusters.ClusterState
		want bool
	}{
		{"last known cache holds the mesh's Peers", mesh, clusters.ClusterState{Synced: true, Peers: []*kilov1alpha1.Peer{earlier, ours}}, true},
		{"last known cache holds none of them", withApplied(3), clusters.ClusterState{Synced: true, Peers: []*kilov1alpha1.Peer{earlier}}, false},
		{"never read, status says Peers were applied", withApplied(3), clusters.ClusterState{}, true},
		{"never read, nothing applied (a missing Secret)", withApplied(0), clusters.ClusterState{}, false},
		{"never read, no status", mesh, clusters.ClusterState{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mayHoldPeers(c.mesh, "us", c.st); got != c.want {
				t.Errorf("mayHoldPeers = %v, want %v", got, c.want)
			}
		})
	}
}
