package clustermesh

import (
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// The plan lists shared *Peers; the view serves them as values, in the
// mesh's cluster order, and leaves the plan's Peers as they were.
func TestAllPeersCopiesThePlansPeers(t *testing.T) {
	shared := &kilov1alpha1.Peer{Spec: kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.0.0.0/24"}, PublicKey: "k"}}
	shared.Name, shared.Labels = "p", map[string]string{planner.LabelSourceCluster: "c"}
	before := shared.DeepCopy()
	p := &planner.Plan{DesiredPeers: map[string]planner.PeerList{"a": planner.PeerListOf(shared), "b": planner.PeerListOf(shared), "c": {}}}
	mesh := &meshv1alpha1.ClusterMesh{Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{{Name: "c"}, {Name: "a"}, {Name: "b"}, {Name: "gone"}}}}
	mesh.Name, mesh.Namespace = "m", "ns"

	out := allPeers(mesh, p)
	if out.Name != "m" || out.Namespace != "ns" || len(out.Targets) != 4 {
		t.Fatalf("view %+v", out)
	}
	for i, want := range []struct {
		cluster string
		peers   int
	}{{"c", 0}, {"a", 1}, {"b", 1}, {"gone", 0}} {
		tp := out.Targets[i]
		if tp.Cluster != want.cluster || len(tp.Peers) != want.peers {
			t.Errorf("target %d: %s with %d Peers, want %s with %d", i, tp.Cluster, len(tp.Peers), want.cluster, want.peers)
		}
		for _, got := range tp.Peers {
			if !apiequality.Semantic.DeepEqual(&got, before) {
				t.Errorf("%s: Peer %+v, want %+v", tp.Cluster, got, before)
			}
		}
	}
	out.Targets[1].Peers[0].Name = "changed"
	if !apiequality.Semantic.DeepEqual(shared, before) {
		t.Errorf("changing the view changed the plan's Peer: %+v", shared)
	}
}
