package planner

import (
	"fmt"
	"slices"
	"strings"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Relaying. Two clusters behind NAT cannot dial each other, so neither
// holds a Peer of the other (their roaming Peers would wait for each other
// forever, and kg forbids one address on two Peers). Instead one group of
// the relay cluster, whose leader both can dial, carries on each spoke the
// other spokes' networks besides its own; its leader holds the spokes'
// roaming Peers like every leader there and forwards from kilo0 to kilo0.
// What the relay carries of spoke c on spoke b is what b could hold of c
// directly (after b's containment, conflicts and host access) and what the
// relay cluster itself holds of c (after its own): a relay never carries an
// address that either side would refuse.

// relayEval is what one candidate relay cluster can carry between the
// pairs of clusters behind NAT.
type relayEval struct {
	h *source
	// group indexes h's exports: the one whose Peer carries the relay.
	group int
	// carry[b][c] are the addresses of c that b's Peer for the group
	// carries, by target and source index; nil for a pair it cannot carry.
	carry map[[2]int][]string
	// pairs counts the pairs it carries both ways; why says, for each pair
	// it cannot, why not, and first for the first of them.
	pairs int
	first string
	why   map[[2]int]string
}

// relay decides the mesh's relay cluster and rewrites the drafts of the
// clusters behind NAT: no Peer of each other, the relay group's Peer
// carrying the others. It returns the relay and every pair not direct;
// both are nil when fewer than two clusters are behind NAT and the spec
// names no relay.
func (pl *planner) relay(drafts []*draft) (*meshv1alpha1.RelayPlan, []meshv1alpha1.PathPlan) {
	var nat []*source
	for _, s := range pl.sources {
		if s.entry.BehindNAT {
			nat = append(nat, s)
		}
	}
	named := pl.in.Spec.RelayCluster
	if len(nat) < 2 && named == "" {
		return nil, nil
	}
	var pairs [][2]*source
	for i, a := range nat {
		for _, b := range nat[i+1:] {
			pairs = append(pairs, [2]*source{a, b})
		}
	}
	view := &meshv1alpha1.RelayPlan{Basis: meshv1alpha1.RelayBasisNone}
	idx := newSourceIndex(pl, drafts)
	var chosen *relayEval
	var best *relayEval
	for _, h := range pl.sources {
		if named != "" && h.name != named {
			continue
		}
		ev, reason, msg := pl.evalRelay(h, pairs, idx)
		if reason == "" && ev.pairs == len(pairs) {
			chosen = ev
			break
		}
		if reason == "" {
			reason, msg = RelayRefusedCannotCarry, ev.first
			if best == nil || ev.pairs > best.pairs {
				best = ev
			}
		}
		view.Refused = append(view.Refused, meshv1alpha1.RelayRefusal{Cluster: h.name, Reason: reason, Message: msg})
	}
	if chosen == nil && best != nil && best.pairs > 0 {
		chosen = best // carries some pairs; the others have no path
	}
	if chosen != nil {
		g := &chosen.h.groups[chosen.group]
		view.Cluster, view.Group, view.PeerName = chosen.h.name, g.name, chosen.h.exports[chosen.group].name
		view.Refused = slices.DeleteFunc(view.Refused, func(r meshv1alpha1.RelayRefusal) bool { return r.Cluster == chosen.h.name })
	}
	switch {
	case named != "" && chosen != nil:
		view.Basis = meshv1alpha1.RelayBasisSpec
		view.Message = fmt.Sprintf("spec.relayCluster names %s; its group %s forwards between the clusters behind NAT, so its leaders must forward from kilo0 to kilo0", named, view.Group)
	case chosen != nil:
		view.Basis = meshv1alpha1.RelayBasisChosen
		view.Message = fmt.Sprintf("%s is the first cluster by name that can relay every pair of clusters behind NAT (spec.relayCluster is empty); its group %s forwards between them, so its leaders must forward from kilo0 to kilo0", chosen.h.name, view.Group)
		if chosen.pairs < len(pairs) {
			view.Message = fmt.Sprintf("no cluster can relay every pair of clusters behind NAT; %s relays the most (%d of %d), through its group %s, whose leaders must forward from kilo0 to kilo0", chosen.h.name, chosen.pairs, len(pairs), view.Group)
		}
	case named != "":
		view.Message = fmt.Sprintf("spec.relayCluster names %s, which cannot relay: see refused", named)
	default:
		view.Message = "no member cluster can relay between the clusters behind NAT: see refused"
	}
	if len(pairs) == 0 {
		view.Message = "fewer than two clusters are behind NAT, so nothing is relayed"
	}
	paths := pl.applyRelay(drafts, nat, pairs, chosen, view)
	return view, paths
}

// applyRelay removes the Peers the clusters behind NAT would hold of each
// other, adds what the relay carries to its group's Peer on each, and
// returns the path of every pair.
func (pl *planner) applyRelay(drafts []*draft, nat []*source, pairs [][2]*source, chosen *relayEval, view *meshv1alpha1.RelayPlan) []meshv1alpha1.PathPlan {
	isNAT := make([]bool, len(pl.sources))
	for _, s := range nat {
		isNAT[s.idx] = true
	}
	for _, b := range nat {
		d := drafts[b.idx]
		relayPeer := -1
		var carried []string
		var relays []string
		out := d.desired[:0:0]
		for _, p := range d.desired {
			si, ok := pl.byName[p.Labels[LabelSourceCluster]]
			if ok && si != b.idx && isNAT[si] && !d.kept[p.Name] {
				continue // the pair is relayed, or has no path
			}
			if chosen != nil && p.Name == chosen.h.exports[chosen.group].name && si == chosen.h.idx {
				relayPeer = len(out)
			}
			out = append(out, p)
		}
		d.desired = out
		if chosen == nil || relayPeer < 0 {
			continue
		}
		orig := d.desired[relayPeer]
		total, overlaps := len(orig.Spec.AllowedIPs), pl.overlapsOthers[chosen.h.idx]
		for _, c := range nat {
			if c != b && chosen.carry[[2]int{c.idx, b.idx}] != nil {
				total += len(chosen.carry[[2]int{b.idx, c.idx}])
				overlaps = overlaps || pl.overlapsOthers[c.idx]
			}
		}
		carried = append(make([]string, 0, total), orig.Spec.AllowedIPs...)
		// Only where declarations overlap can two clusters' addresses be one.
		var seen map[string]struct{}
		if overlaps {
			seen = make(map[string]struct{}, total)
			for _, a := range orig.Spec.AllowedIPs {
				seen[a] = struct{}{}
			}
		}
		for _, c := range nat {
			addrs := chosen.carry[[2]int{b.idx, c.idx}]
			if c == b || len(addrs) == 0 || chosen.carry[[2]int{c.idx, b.idx}] == nil {
				continue
			}
			added := false
			for _, a := range addrs {
				if seen != nil {
					if _, dup := seen[a]; dup {
						continue
					}
					seen[a] = struct{}{}
				}
				carried, added = append(carried, a), true
			}
			if added {
				relays = append(relays, c.name)
			}
		}
		if len(relays) == 0 {
			continue
		}
		p := *orig // shares the labels, read-only
		p.Annotations = make(map[string]string, len(orig.Annotations)+1)
		for k, v := range orig.Annotations {
			p.Annotations[k] = v
		}
		p.Annotations[AnnotationRelays] = strings.Join(relays, ",")
		p.Spec.AllowedIPs = carried
		d.desired[relayPeer] = &p
	}
	var paths []meshv1alpha1.PathPlan
	for _, pr := range pairs {
		b, c := pr[0], pr[1]
		path := meshv1alpha1.PathPlan{Clusters: []string{b.name, c.name}}
		if chosen != nil && chosen.carry[[2]int{b.idx, c.idx}] != nil && chosen.carry[[2]int{c.idx, b.idx}] != nil {
			path.Kind, path.Via, path.Reason = meshv1alpha1.PathRelayed, chosen.h.name, PathReasonBothBehindNAT
			path.Message = fmt.Sprintf("both are behind NAT; on each, Peer %s (group %s of %s) also carries the other's networks", view.PeerName, view.Group, chosen.h.name)
		} else {
			why := view.Message
			if chosen != nil {
				why = fmt.Sprintf("%s cannot carry it: %s", chosen.h.name, chosen.why[[2]int{b.idx, c.idx}])
			}
			path.Kind, path.Reason = meshv1alpha1.PathNone, ConflictNoRelay
			path.Message = "both are behind NAT and no cluster relays between them: " + why
			pl.issues.conflict(ConflictNoRelay, b.name, c.name, "pairs of clusters behind NAT with no relay between them; nothing is carried between the two", fmt.Sprintf("%s and %s: %s", b.name, c.name, why))
		}
		paths = append(paths, path)
	}
	return paths
}

// evalRelay says whether h can relay and what it carries for each pair;
// a reason when it cannot relay at all.
func (pl *planner) evalRelay(h *source, pairs [][2]*source, idx *sourceIndex) (*relayEval, string, string) {
	switch {
	case h.entry.BehindNAT:
		return nil, RelayRefusedBehindNAT, "the cluster is behind NAT itself"
	case !h.reachable:
		return nil, RelayRefusedUnreachable, "the cluster is unreachable, so its groups are unknown; the Peers representing it, relaying or not, stay as they are"
	case h.keepReason != "":
		return nil, RelayRefusedNoDialableGroup, "the cluster has no ready group"
	}
	group := pl.relayGroup(h)
	if group < 0 {
		return nil, RelayRefusedNoDialableGroup, "no ready group of the cluster has an endpoint the others can dial"
	}
	ev := &relayEval{h: h, group: group, carry: map[[2]int][]string{}, why: map[[2]int]string{}}
	name := h.exports[group].name
	for _, pr := range pairs {
		b, c := pr[0], pr[1]
		ok := true
		for _, dir := range [][2]*source{{b, c}, {c, b}} {
			t, s := dir[0], dir[1]
			why := ""
			held, kept := idx.named(t, name)
			switch {
			case !held:
				why = fmt.Sprintf("%s holds no Peer %s of group %s: see the conflicts for %s", t.name, name, h.groups[group].name, t.name)
			case kept:
				why = fmt.Sprintf("%s keeps Peer %s of group %s as it is", t.name, name, h.groups[group].name)
			case idx.keptOf(t, s):
				why = fmt.Sprintf("%s keeps a Peer of %s as it is, which claims its addresses", t.name, s.name)
			default:
				addrs := idx.carried(t, s, h)
				if len(addrs) == 0 {
					why = fmt.Sprintf("nothing of %s may cross both into %s and into %s (its Peers there, host access, conflicts)", s.name, h.name, t.name)
				} else {
					ev.carry[[2]int{t.idx, s.idx}] = addrs
				}
			}
			if why != "" && ok {
				ok = false
				ev.why[[2]int{b.idx, c.idx}] = why
				if ev.first == "" {
					ev.first = fmt.Sprintf("for %s and %s: %s", b.name, c.name, why)
				}
			}
		}
		if ok {
			ev.pairs++
		}
	}
	return ev, "", ""
}

// relayGroup picks, among h's ready exports with an endpoint, the one with
// the highest rendezvous hash of its group name, as the extra networks'
// holder is picked: deterministic, and it moves only when that group stops
// being ready or a newcomer outranks it. -1 when there is none.
func (pl *planner) relayGroup(h *source) int {
	best, bestScore := -1, uint64(0)
	for ei := range h.exports {
		if e := &h.exports[ei]; !e.ready || e.endpoint.IsZero() {
			continue
		}
		if score := rendezvous(h.name, h.groups[ei].name); best < 0 || score > bestScore {
			best, bestScore = ei, score
		}
	}
	return best
}

// natPair reports whether t and s are two clusters behind NAT.
func (pl *planner) natPair(t, s *source) bool {
	return t != s && t.entry.BehindNAT && s.entry.BehindNAT
}

// natPeers reports whether t is behind NAT with another cluster: then its
// Peers are planned one by one.
func (pl *planner) natPeers(t *source) bool {
	if !t.entry.BehindNAT {
		return false
	}
	for _, s := range pl.sources {
		if pl.natPair(t, s) {
			return true
		}
	}
	return false
}
