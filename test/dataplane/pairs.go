package dataplane

import "slices"

// Which pairs the bed probes.

// pod is n's pod as an endpoint.
func pod(n *Node) Endpoint { return Endpoint{Node: n, Addr: n.Pod} }

// Pairs are every pair of distinct nodes, one from from and one from to,
// whose pods are of one IP family.
func Pairs(from, to []*Node) []Pair {
	var out []Pair
	for _, f := range from {
		for _, t := range to {
			if f != t && f.Pod.Is6() == t.Pod.Is6() {
				out = append(out, Pair{From: pod(f), To: pod(t)})
			}
		}
	}
	return out
}

// Both are Pairs(a, b) and Pairs(b, a).
func Both(a, b []*Node) []Pair { return append(Pairs(a, b), Pairs(b, a)...) }

// Family keeps the pairs of IPv6 pods (v6) or of IPv4 pods.
func Family(pairs []Pair, v6 bool) []Pair {
	return slices.DeleteFunc(slices.Clone(pairs), func(p Pair) bool { return p.To.Addr.Is6() != v6 })
}

// ClusterNodes are the nodes of the given clusters that the plan does not
// leave out.
func (b *Bed) ClusterNodes(clusters ...int) []*Node {
	return b.nodesWhere(func(n *Node) bool { return n.Skip == SkipNone && slices.Contains(clusters, n.Cluster) })
}

// MeshNodes are the nodes of the mesh's clusters that the plan does not
// leave out: every pair of their pods must be reachable.
func (b *Bed) MeshNodes() []*Node { return b.ClusterNodes(b.MeshClusters()...) }

// SkippedNodes are the nodes made to be left out by the plan.
func (b *Bed) SkippedNodes() []*Node {
	return b.nodesWhere(func(n *Node) bool { return n.Skip != SkipNone })
}

func (b *Bed) nodesWhere(keep func(*Node) bool) []*Node {
	var out []*Node
	for _, n := range b.Nodes {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}

// Others are the mesh nodes outside cluster i.
func (b *Bed) Others(i int) []*Node {
	return slices.DeleteFunc(b.MeshNodes(), func(n *Node) bool { return n.Cluster == i })
}

// ServicePairs go from every IPv4 mesh pod to the service address of every
// other cluster of the mesh, to be answered by its anchor.
func (b *Bed) ServicePairs() []Pair {
	b.mu.Lock()
	services := make(map[int]*Node, len(b.services))
	for k, v := range b.services {
		services[k] = v
	}
	b.mu.Unlock()
	var out []Pair
	for _, from := range b.MeshNodes() {
		for i, anchor := range services {
			if from.Cluster != i && from.Pod.Is4() {
				out = append(out, Pair{From: pod(from), To: Endpoint{Node: anchor, Addr: ServiceAddr(i)}})
			}
		}
	}
	return out
}

// SkippedPairs go from the pods of the other clusters to the pods of the
// nodes the plan leaves out, and back from those kg runs on (the others
// have no routes at all).
func (b *Bed) SkippedPairs() []Pair {
	var out []Pair
	for _, s := range b.SkippedNodes() {
		others := b.Others(s.Cluster)
		out = append(out, Pairs(others, []*Node{s})...)
		if s.RunsAgent() {
			out = append(out, Pairs([]*Node{s}, others)...)
		}
	}
	return out
}
