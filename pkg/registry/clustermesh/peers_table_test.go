package clustermesh

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

func testPeer(name, source, group string, endpoint *kilov1alpha1.PeerEndpoint, ips ...string) *kilov1alpha1.Peer {
	p := &kilov1alpha1.Peer{Spec: kilov1alpha1.PeerSpec{AllowedIPs: ips, Endpoint: endpoint, PublicKey: "key-" + name, PersistentKeepalive: 25}}
	p.Name = name
	p.Labels = map[string]string{planner.LabelSourceCluster: source}
	p.Annotations = map[string]string{planner.AnnotationSourceGroup: group}
	return p
}

// testPeersPlan: us holds eu's location group; eu holds us's two nodes
// (full granularity), one of them roaming.
func testPeersPlan() *planner.Plan {
	ip := &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "2001:db8::1"}, Port: 51820}
	dns := &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{DNS: "gw.example.com"}, Port: 51821}
	eu := testPeer("m-eu-a", "eu", "location:a", ip, "10.1.0.0/24", "10.1.1.0/24", "10.1.2.0/24", "10.1.3.0/24", "10.1.4.0/24", "10.4.0.1/32")
	us := testPeer("m-us-n1", "us", "node:n1", dns, "10.2.0.0/24")
	roaming := testPeer("m-us-n2", "us", "node:n2", nil, "10.2.1.0/24")
	eu.Annotations[planner.AnnotationRelays] = "ap,home" // us is behind NAT, and so are they
	return &planner.Plan{DesiredPeers: map[string]planner.PeerList{"eu": planner.PeerListOf(us, roaming), "us": planner.PeerListOf(eu)}}
}

func TestPeersTable(t *testing.T) {
	p := testPeersPlan()
	mesh := &meshv1alpha1.ClusterMesh{Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{{Name: "us"}, {Name: "eu"}}}}
	mesh.Name, mesh.Namespace = "m", "tenant"
	onUS := [][]interface{}{
		{"us", "m-eu-a", "eu", "location:a", "[2001:db8::1]:51820", "10.1.0.0/24,10.1.1.0/24,10.1.2.0/24,10.1.3.0/24 +2 more", "ap,home", int64(25), "key-m-eu-a"},
	}
	onEU := [][]interface{}{
		{"eu", "m-us-n1", "us", "node:n1", "gw.example.com:51821", "10.2.0.0/24", "<none>", int64(25), "key-m-us-n1"},
		{"eu", "m-us-n2", "us", "node:n2", "<none>", "10.2.1.0/24", "<none>", int64(25), "key-m-us-n2"},
	}
	for _, tc := range []struct {
		name string
		view runtime.Object
		want [][]interface{}
	}{
		{"every cluster, in the mesh's order", allPeers(mesh, p), append(append([][]interface{}{}, onUS...), onEU...)},
		{"?cluster=eu", &peerList{meshNamespace: "tenant", meshName: "m", cluster: "eu", plan: p}, onEU},
		{"a cluster without Peers", &peerList{meshNamespace: "tenant", meshName: "m", cluster: "none", plan: p}, nil},
	} {
		for _, objects := range []bool{false, true} {
			opts := &metav1.TableOptions{}
			if objects {
				opts.IncludeObject = metav1.IncludeObject
			}
			t.Run(tc.name+", includeObject="+string(opts.IncludeObject), func(t *testing.T) {
				table, err := (&PeersREST{}).ConvertToTable(context.Background(), tc.view, opts)
				if err != nil {
					t.Fatal(err)
				}
				checkCells(t, table, tc.want, len(peersColumns))
				if objects {
					for i, row := range table.Rows {
						got := row.Object.Object.(*meshv1alpha1.ClusterMeshPeers)
						if len(got.Targets) != 1 || got.Targets[0].Cluster != tc.want[i][0] ||
							len(got.Targets[0].Peers) != 1 || got.Targets[0].Peers[0].Name != tc.want[i][1] {
							t.Errorf("row %d: object %+v is not the view of its Peer", i, got.Targets)
						}
					}
				}
				checkRowObjects(t, table, "m")
			})
		}
	}
	_, err := (&PeersREST{}).ConvertToTable(context.Background(), &textStream{contentType: "text/plain"}, nil)
	if !apierrors.IsBadRequest(err) {
		t.Errorf("a WireGuard configuration as a table: want BadRequest, got %v", err)
	}
}
