package planner

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Uncarried is one direction between two reachable member clusters along
// which the plan carries no Peer: no group of Source reaches Target.
type Uncarried struct {
	Source, Target string
}

// Uncarried lists the directions, sorted, between reachable clusters along
// which nothing is carried although Source has something to carry: a
// group that is exported but withheld from Target by a conflict, or a
// group left out for its networks (IsNetworkGroupReason). A cluster with
// no Kilo group at all (Kilo not running yet) or whose groups only lack an
// endpoint is not counted: that is its nodes' state, which the warnings
// name. A kept Peer withheld for a conflict carries nothing either, since
// kg keys peers by public key. Directions into or out of local are left
// out while host access withholds something: the Granted condition tells
// about those; so are pairs with no path (NoPath). What a relay Peer
// carries of a cluster behind NAT counts as carried.
func (p *Plan) Uncarried(local string) []Uncarried {
	return p.uncarried(local, func(t *meshv1alpha1.TargetPlan) func(string) bool {
		carried := p.carriedWithoutBlocked(t)
		return func(s string) bool { return carried[s] > 0 }
	})
}

// uncarried is Uncarried with what a target's Peers carry told by carries.
func (p *Plan) uncarried(local string, carries func(t *meshv1alpha1.TargetPlan) func(source string) bool) []Uncarried {
	hostWithheld := p.View.HostAccess != nil && !p.View.HostAccess.Granted && local != ""
	var sources []string
	for _, c := range p.View.Clusters {
		if c.Reachable && hasCarriable(c.Summary.ReadyGroups, p.Groups[c.Name]) {
			sources = append(sources, c.Name)
		}
	}
	if len(sources) == 0 {
		return nil
	}
	noPath := map[[2]string]bool{}
	for _, u := range p.NoPath() {
		noPath[pairKey(u.Source, u.Target)] = true
	}
	var out []Uncarried
	for i := range p.View.Targets {
		t := &p.View.Targets[i]
		if c, ok := p.Cluster(t.Cluster); !ok || !c.Reachable {
			continue
		}
		carried := carries(t)
		for _, s := range sources {
			if s == t.Cluster || carried(s) || hostWithheld && (s == local || t.Cluster == local) || noPath[pairKey(s, t.Cluster)] {
				continue
			}
			out = append(out, Uncarried{Source: s, Target: t.Cluster})
		}
	}
	slices.SortFunc(out, func(a, b Uncarried) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Target, b.Target))
	})
	return out
}

// carriedWithoutBlocked is Carried of target t less what its kept Peers
// withheld for a conflict carry: their count is read from the plan, so a
// pass costs the kept Peers, not every desired one.
func (p *Plan) carriedWithoutBlocked(t *meshv1alpha1.TargetPlan) map[string]int {
	counts := p.Carried[t.Cluster]
	blocked := map[string]bool{}
	for _, k := range t.Kept {
		if k.Reason == KeptSourceUnreachable || k.Reason == KeptNoReadyGroups || blocked[k.Name] {
			continue
		}
		blocked[k.Name] = true
		peer, ok := p.DesiredPeers[t.Cluster].Get(k.Name, peerName)
		if !ok {
			continue
		}
		if len(blocked) == 1 {
			counts = maps.Clone(counts)
			if counts == nil {
				counts = map[string]int{}
			}
		}
		for _, s := range carriedBy(peer) {
			counts[s]--
		}
	}
	return counts
}

// CarriedOf counts, per source cluster, the Peers of a target's desired
// list that carry it (Plan.Carried).
func CarriedOf(peers PeerList) map[string]int {
	counts := map[string]int{}
	for _, peer := range peers.All() {
		if peer.Annotations[AnnotationRelays] == "" { // the common case, without carriedBy's slice
			counts[peer.Labels[LabelSourceCluster]]++
			continue
		}
		for _, s := range carriedBy(peer) {
			counts[s]++
		}
	}
	return counts
}

// recarry keeps counts, a target's Plan.Carried, when its desired Peer was
// becomes now; it returns counts itself when both carry the same clusters,
// else a changed copy (plans share their maps).
func recarry(counts map[string]int, was, now *kilov1alpha1.Peer) map[string]int {
	before, after := carriedBy(was), carriedBy(now)
	if slices.Equal(before, after) {
		return counts
	}
	counts = maps.Clone(counts)
	for _, s := range before {
		if counts[s]--; counts[s] == 0 {
			delete(counts, s)
		}
	}
	for _, s := range after {
		counts[s]++
	}
	return counts
}

// carriedBy lists, sorted and each once, the clusters a desired Peer
// carries: its source and those it relays.
func carriedBy(peer *kilov1alpha1.Peer) []string {
	src := peer.Labels[LabelSourceCluster]
	r := peer.Annotations[AnnotationRelays]
	if r == "" {
		return []string{src}
	}
	return slices.Compact(slices.Sorted(slices.Values(append(strings.Split(r, ","), src))))
}

// hasCarriable reports whether a cluster has a group the mesh should carry:
// an exported one, or one left out for its networks.
func hasCarriable(readyGroups int32, groups GroupList) bool {
	if readyGroups > 0 {
		return true
	}
	for _, g := range groups.All() {
		if !g.Ready && IsNetworkGroupReason(g.Reason) {
			return true
		}
	}
	return false
}

// NoPath lists the pairs of clusters behind NAT that no cluster relays
// between, each once, Source before Target by name.
func (p *Plan) NoPath() []Uncarried {
	var out []Uncarried
	for _, pp := range p.View.Paths {
		if pp.Kind == meshv1alpha1.PathNone && len(pp.Clusters) == 2 {
			out = append(out, Uncarried{Source: pp.Clusters[0], Target: pp.Clusters[1]})
		}
	}
	return out
}

func pairKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}
