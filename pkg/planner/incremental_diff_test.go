package planner

import (
	"maps"
	"slices"
	"testing"
)

// TestStateDiff: Diff reports the Nodes and Peers a new version of a
// cluster's lists replaced, created or deleted, whether the version shares
// chunks with the last (With and Without, as member caches make them) or
// nothing (listed again), and Whole for what Next cannot patch: a node
// appearing or going, or a name held twice.
func TestStateDiff(t *testing.T) {
	const c = "cluster-01"
	base := benchInput(2, 600, "full") // lists of several chunks
	base = withPeers(base, mustCompute(t, base))
	_, st, err := Start(base)
	if err != nil {
		t.Fatal(err)
	}
	n := node(t, base, c, "cluster-01-node-00300")
	nodeEdited := n.DeepCopy()
	annotate(nodeEdited, "example.com/edited", "true")
	nodeNew := node(t, base, c, "cluster-01-node-00000").DeepCopy()
	nodeNew.Name = "cluster-01-node-00300a"
	p := base.Clusters[c].Peers.Slice()[base.Clusters[c].Peers.Len()/2]
	peerEdited := p.DeepCopy()
	peerEdited.ResourceVersion = "2"
	peerNew := foreignPeer("other", "poDRyZi1k/Q97oTX9tc/GcXEmH7KYc3incxDV3qiVE0=", "10.201.0.0/16")
	relisted := func(s ClusterSnapshot) ClusterSnapshot {
		s.Nodes, s.Peers = nodesOf(s.Nodes.Slice()...), heldPeers(s.Peers.Slice()...)
		return s
	}
	for _, tc := range []struct {
		name  string
		edit  func(s ClusterSnapshot) ClusterSnapshot
		nodes []NodeChange
		peers []PeerChange
		whole bool
	}{
		{name: "nothing", edit: func(s ClusterSnapshot) ClusterSnapshot { return s }},
		{name: "listed again", edit: relisted},
		{name: "a node replaced", edit: func(s ClusterSnapshot) ClusterSnapshot {
			s.Nodes = s.Nodes.With(nodeEdited, nodeName)
			return s
		}, nodes: []NodeChange{{Cluster: c, Old: n, New: nodeEdited}}},
		{name: "a node replaced, listed again", edit: func(s ClusterSnapshot) ClusterSnapshot {
			s.Nodes = s.Nodes.With(nodeEdited, nodeName)
			return relisted(s)
		}, nodes: []NodeChange{{Cluster: c, Old: n, New: nodeEdited}}},
		{name: "a node added", whole: true, edit: func(s ClusterSnapshot) ClusterSnapshot {
			s.Nodes = s.Nodes.With(nodeNew, nodeName)
			return s
		}},
		{name: "a node removed", whole: true, edit: func(s ClusterSnapshot) ClusterSnapshot {
			s.Nodes, _ = s.Nodes.Without(n.Name, nodeName)
			return s
		}},
		{name: "a node name held twice", whole: true, edit: func(s ClusterSnapshot) ClusterSnapshot {
			s.Nodes = nodesOf(append(s.Nodes.Slice(), nodeEdited)...)
			return s
		}},
		{name: "a Peer replaced", edit: func(s ClusterSnapshot) ClusterSnapshot {
			s.Peers = s.Peers.With(peerEdited, peerName)
			return s
		}, peers: []PeerChange{{Cluster: c, Old: p, New: peerEdited}}},
		{name: "a Peer created and one deleted", edit: func(s ClusterSnapshot) ClusterSnapshot {
			s.Peers, _ = s.Peers.With(peerNew, peerName).Without(p.Name, peerName)
			return s
		}, peers: []PeerChange{{Cluster: c, Old: p}, {Cluster: c, New: peerNew}}},
		{name: "a Peer name held twice", whole: true, edit: func(s ClusterSnapshot) ClusterSnapshot {
			s.Peers = heldPeers(append(s.Peers.Slice(), peerEdited)...)
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			in.Clusters = maps.Clone(base.Clusters)
			in.Clusters[c] = tc.edit(in.Clusters[c])
			ch := st.Diff(&in)
			if ch.Whole != tc.whole {
				t.Fatalf("Whole %v, want %v", ch.Whole, tc.whole)
			}
			// Changes are compared by pointer: Next matches objects by identity.
			if !tc.whole && (!slices.Equal(ch.Nodes, tc.nodes) || !slices.Equal(ch.Peers, tc.peers)) {
				t.Errorf("changes %+v, want nodes %+v and Peers %+v", ch, tc.nodes, tc.peers)
			}
		})
	}
}
