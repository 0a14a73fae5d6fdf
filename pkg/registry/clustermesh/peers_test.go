package clustermesh

import (
	"encoding/json"
	"fmt"
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

// The view of every cluster's Peers is refused when it would be larger than
// one answer may be, saying how to ask for one cluster's; the estimate is
// within a quarter of the answer's size.
func TestAllPeersBounded(t *testing.T) {
	plan := func(clusters, ips int) *planner.Plan {
		p := &planner.Plan{DesiredPeers: map[string]planner.PeerList{}}
		for c := range clusters {
			var peers []*kilov1alpha1.Peer
			for s := range clusters {
				if s == c {
					continue
				}
				peer := &kilov1alpha1.Peer{Spec: kilov1alpha1.PeerSpec{PublicKey: "PPt3wpTJT5xPX5o6MbKeAgJjSuO0DbhpD3PmWYDGskU="}}
				peer.Name = fmt.Sprintf("bench-c%d-location-loc-000", s)
				// As the planner labels and annotates it.
				peer.Labels = map[string]string{planner.LabelManagedBy: "kilo-mesh-apiserver", planner.LabelMeshNamespace: "bench", planner.LabelMeshName: "bench",
					planner.LabelMeshUID: "4c4f6d2e-6ec0-4b1e-9f0e-4ae0d1d0bb6f", planner.LabelSourceCluster: fmt.Sprintf("c%d", s), planner.LabelInstallation: "kilo-mesh-system"}
				peer.Annotations = map[string]string{planner.AnnotationSourceGroup: "location:loc-000", planner.AnnotationSourceLeader: fmt.Sprintf("c%d-n00000", s)}
				peer.Spec.Endpoint = &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "198.18.0.1"}, Port: 51820}
				peer.Spec.PersistentKeepalive = 25
				for i := range ips {
					peer.Spec.AllowedIPs = append(peer.Spec.AllowedIPs, fmt.Sprintf("10.%d.%d.0/24", s, i))
				}
				peers = append(peers, peer)
			}
			p.DesiredPeers[fmt.Sprintf("c%d", c)] = planner.PeerListOf(peers...)
		}
		return p
	}
	small := plan(20, 100)
	mesh := &meshv1alpha1.ClusterMesh{}
	for c := range 20 {
		mesh.Spec.Clusters = append(mesh.Spec.Clusters, meshv1alpha1.ClusterEntry{Name: fmt.Sprintf("c%d", c)})
	}
	raw, err := json.Marshal(allPeers(mesh, small))
	if err != nil {
		t.Fatal(err)
	}
	if est := allPeersSize(small); est < int64(len(raw))*3/4 || est > int64(len(raw))*5/4 {
		t.Errorf("estimated %d bytes, the answer is %d", est, len(raw))
	}
	if allPeersSize(plan(100, 100)) > maxAllPeersBytes {
		t.Error("the view of 100 clusters of one location each is refused")
	}
	if allPeersSize(plan(250, 100)) <= maxAllPeersBytes {
		t.Error("the view of 250 clusters of one location each is not refused")
	}
}
