package planner

import (
	"cmp"
	"slices"
	"strings"

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
		blockedKept := map[string]bool{}
		for _, k := range t.Kept {
			if k.Reason != KeptSourceUnreachable && k.Reason != KeptNoReadyGroups {
				blockedKept[k.Name] = true
			}
		}
		carried := map[string]bool{}
		for _, peer := range p.DesiredPeers[t.Cluster].All() {
			if !blockedKept[peer.Name] {
				carried[peer.Labels[LabelSourceCluster]] = true
				if r := peer.Annotations[AnnotationRelays]; r != "" {
					for _, s := range strings.Split(r, ",") {
						carried[s] = true
					}
				}
			}
		}
		for _, s := range sources {
			if s == t.Cluster || carried[s] || hostWithheld && (s == local || t.Cluster == local) || noPath[pairKey(s, t.Cluster)] {
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
