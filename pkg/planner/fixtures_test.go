package planner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
)

// fixtureNow is the time the fixtures' last-seen annotations are relative to.
var fixtureNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

const (
	testNamespace = "team-a"
	testMesh      = "prod"
	testUID       = "5b1f0c3e-2d7a-4e8b-9c61-0f2a7d9e4b10"
)

// loadNodes reads a v1 List of Nodes from testdata/clusters.
func loadNodes(t testing.TB, file string) []*corev1.Node {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "clusters", file))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	var list struct {
		APIVersion string        `json:"apiVersion"`
		Kind       string        `json:"kind"`
		Items      []corev1.Node `json:"items"`
	}
	if err := yaml.UnmarshalStrict(b, &list); err != nil {
		t.Fatalf("decoding fixture %s: %v", file, err)
	}
	out := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out
}

// nodesOf lists nodes as a member cache would hand them over: sorted by
// name, nil left out.
func nodesOf(nodes ...*corev1.Node) List[*corev1.Node] { return chunklist.Sorted(nodes, nodeName) }

// heldPeers lists the Peers held on a cluster as its cache would hand them over.
func heldPeers(peers ...*kilov1alpha1.Peer) PeerList { return chunklist.Sorted(peers, peerName) }

// testSpec declares the three fixture clusters with disjoint networks.
func testSpec() meshv1alpha1.ClusterMeshSpec {
	return meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
		{
			Name: "eu", Local: true,
			PodCIDRs: []string{"10.10.0.0/16", "fd10::/56"}, WireguardCIDR: "10.14.0.0/16",
			ServiceCIDR: "10.110.0.0/16", NodeCIDRs: []string{"192.168.0.0/16"},
		},
		{
			Name:     "us",
			PodCIDRs: []string{"10.20.0.0/16"}, WireguardCIDR: "10.24.0.0/16",
			ServiceCIDR: "10.120.0.0/16", AdditionalCIDRs: []string{"172.24.0.0/16"}, NodeCIDRs: []string{"10.0.0.0/24"},
		},
		{
			Name:     "home",
			PodCIDRs: []string{"10.30.0.0/16"}, WireguardCIDR: "10.34.0.0/16",
			PersistentKeepalive: 25,
		},
	}}
}

// testInput is the three fixture clusters, all reachable, holding no Peers.
func testInput(t testing.TB) Input {
	return Input{
		MeshNamespace: testNamespace, MeshName: testMesh, MeshUID: testUID,
		Spec: testSpec(),
		Clusters: map[string]ClusterSnapshot{
			"eu":   {Reachable: true, Nodes: nodesOf(loadNodes(t, "eu.yaml")...)},
			"us":   {Reachable: true, Nodes: nodesOf(loadNodes(t, "us.yaml")...)},
			"home": {Reachable: true, Nodes: nodesOf(loadNodes(t, "home.yaml")...)},
		},
		Now: fixtureNow,
		// The local cluster's access is the subject of hostaccess_test.go.
		HostAccess: HostAccess{Mode: HostUnrestricted},
	}
}

// mustCompute plans in or fails the test.
func mustCompute(t testing.TB, in Input) *Plan {
	t.Helper()
	p, err := Compute(in)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	return p
}

// withPeers returns in with each cluster holding the Peers plan wants there,
// as if a reconciler had applied them.
func withPeers(in Input, plan *Plan) Input {
	out := in
	out.Clusters = make(map[string]ClusterSnapshot, len(in.Clusters))
	for name, snap := range in.Clusters {
		var peers []*kilov1alpha1.Peer
		for _, d := range plan.DesiredPeers[name].All() {
			p := d.DeepCopy()
			p.ResourceVersion = "1"
			peers = append(peers, p)
		}
		snap.Peers = heldPeers(peers...)
		out.Clusters[name] = snap
	}
	return out
}

// node returns the named node of a snapshot.
func node(t testing.TB, in Input, cluster, name string) *corev1.Node {
	t.Helper()
	if n, ok := in.Clusters[cluster].Nodes.Get(name, nodeName); ok {
		return n
	}
	t.Fatalf("no node %s in cluster %s", name, cluster)
	return nil
}

// peerOf returns the Peer for group of source on target.
func peerOf(t testing.TB, p *Plan, target, source, group string) *kilov1alpha1.Peer {
	t.Helper()
	name := PeerName(testNamespace, testMesh, source, group)
	for _, d := range p.DesiredPeers[target].All() {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// decision returns the decision on one node.
func decision(t testing.TB, p *Plan, cluster, nodeName string) meshv1alpha1.NodeDecision {
	t.Helper()
	if _, ok := p.Cluster(cluster); !ok {
		t.Fatalf("no cluster %s in plan", cluster)
	}
	for _, d := range p.Nodes[cluster].All() {
		if d.Node == nodeName {
			return *d
		}
	}
	t.Fatalf("no decision for node %s of %s", nodeName, cluster)
	return meshv1alpha1.NodeDecision{}
}
