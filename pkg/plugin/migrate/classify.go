package migrate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Action is what adoption does with one Peer of the predecessor.
type Action string

const (
	// ActionAdopt hands the Peer over: it carries the key of a group
	// leader the plan exports, and the server replaces it with the group's
	// Peer in the pass that deletes it.
	ActionAdopt Action = "adopt"
	// ActionRemove hands the Peer over for removal: a per-node Peer the
	// plan groups under a leader, or a second Peer with a key already
	// adopted (the old anchor Peers), or a key no exported group has.
	ActionRemove Action = "remove"
	// ActionLeave leaves the Peer as it is: its source cluster is not in
	// the mesh, or cannot be read now.
	ActionLeave Action = "leave"
)

// PeerFate is the decision about one Peer of the predecessor.
type PeerFate struct {
	// Target is the cluster the Peer is on.
	Target string
	Peer   *kilov1alpha1.Peer
	// Source is the cluster it represents (its predecessor label).
	Source string
	Action Action
	Reason string
}

// SourceKeys is what adoption knows of one source cluster: the public keys
// of its nodes, and its groups from the server's plan.
type SourceKeys struct {
	// Cluster is the source's plan; nil when unreachable.
	Cluster *meshv1alpha1.ClusterPlan
	// NodeKeys are the nodes' kilo.squat.ai/key, by node name.
	NodeKeys map[string]string
}

// NodeKeys reads the public keys of nodes.
func NodeKeys(nodes []corev1.Node) map[string]string {
	out := make(map[string]string, len(nodes))
	for i := range nodes {
		if k := nodes[i].Annotations[kilov1alpha1.AnnotationKey]; k != "" {
			out[nodes[i].Name] = k
		}
	}
	return out
}

// Classify decides, for every Peer of the predecessor on every target, what
// adoption does with it. peers are those labelled with the predecessor's
// mesh; sources holds what is known of each member cluster of the mesh.
// For each key of an exported group leader exactly one Peer per target is
// adopted: the per-node Peer of the leader if there is one, else the first
// by name; every other Peer with that key (the old anchor Peers) goes.
func Classify(peers map[string][]kilov1alpha1.Peer, sources map[string]*SourceKeys) []PeerFate {
	var out []PeerFate
	targets := make([]string, 0, len(peers))
	for t := range peers {
		targets = append(targets, t)
	}
	slices.Sort(targets)
	for _, target := range targets {
		list := slices.Clone(peers[target])
		slices.SortFunc(list, func(a, b kilov1alpha1.Peer) int { return strings.Compare(a.Name, b.Name) })
		adopted := map[string]string{} // source/key -> adopted Peer name
		// Leaders' own Peers first, so that they win over anchors.
		slices.SortStableFunc(list, func(a, b kilov1alpha1.Peer) int {
			return cmp.Compare(leaderRank(&a, sources), leaderRank(&b, sources))
		})
		for i := range list {
			p := &list[i]
			f := PeerFate{Target: target, Peer: p, Source: p.Labels[LabelPredecessorSource]}
			f.Action, f.Reason = decide(p, f.Source, target, sources[f.Source], adopted)
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b PeerFate) int {
		return cmp.Or(strings.Compare(a.Target, b.Target), strings.Compare(a.Peer.Name, b.Peer.Name))
	})
	return out
}

// leaderRank is 0 for the per-node Peer of an exported group's leader
// (named <mesh>--<source>--<leader> by the predecessor), else 1.
func leaderRank(p *kilov1alpha1.Peer, sources map[string]*SourceKeys) int {
	src := p.Labels[LabelPredecessorSource]
	s := sources[src]
	if s == nil || s.Cluster == nil {
		return 1
	}
	for _, g := range s.Cluster.Groups {
		if g.Ready && strings.HasSuffix(p.Name, "--"+src+"--"+g.Leader) && s.NodeKeys[g.Leader] == p.Spec.PublicKey {
			return 0
		}
	}
	return 1
}

func decide(p *kilov1alpha1.Peer, source, target string, s *SourceKeys, adopted map[string]string) (Action, string) {
	switch {
	case source == "":
		return ActionLeave, "it has no " + LabelPredecessorSource + " label"
	case s == nil:
		return ActionLeave, fmt.Sprintf("its source cluster %s is not a member of the mesh", source)
	case source == target:
		return ActionLeave, "it represents the cluster it is on"
	case s.Cluster == nil || !s.Cluster.Reachable:
		return ActionLeave, fmt.Sprintf("%s cannot be read now, so its groups are unknown; import --adopt again when it answers", source)
	}
	key := p.Spec.PublicKey
	for i := range s.Cluster.Groups {
		g := &s.Cluster.Groups[i]
		if !g.Ready || s.NodeKeys[g.Leader] != key {
			continue
		}
		id := source + "/" + key
		if first, ok := adopted[id]; ok {
			return ActionRemove, fmt.Sprintf("it has the key of %s's leader %s, like %s: kg keys peers by public key, one Peer per key", g.Name, g.Leader, first)
		}
		adopted[id] = p.Name
		return ActionAdopt, fmt.Sprintf("key of %s's leader %s; replaced by Peer %s in the server's next pass", g.Name, g.Leader, g.PeerName)
	}
	nodes := make([]string, 0, len(s.NodeKeys))
	for node := range s.NodeKeys {
		nodes = append(nodes, node)
	}
	slices.Sort(nodes)
	for _, node := range nodes {
		if s.NodeKeys[node] != key {
			continue
		}
		for _, g := range s.Cluster.Groups {
			if slices.Contains(g.Members, node) && g.Ready {
				return ActionRemove, fmt.Sprintf("per-node Peer of %s, a member of %s: the group's Peer %s (leader %s) carries its addresses", node, g.Name, g.PeerName, g.Leader)
			}
		}
		return ActionRemove, fmt.Sprintf("per-node Peer of %s, which no exported group holds (kubectl mesh why MESH %s --cluster %s)", node, node, source)
	}
	return ActionRemove, fmt.Sprintf("no node of %s has its key any more", source)
}
