package planner

import (
	"net/netip"
	"slices"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// sourceIndex reads the drafts by target and source, lazily: only the
// targets a relay involves are read.
type sourceIndex struct {
	pl     *planner
	drafts []*draft
	// bySource[t] maps each source index to the positions of its Peers
	// in the target's desired list.
	bySource []map[int][]int
	// hub holds, by (relay, source), the addresses the relay holds of
	// the source.
	hub map[[2]int]map[string]struct{}
}

func newSourceIndex(pl *planner, drafts []*draft) *sourceIndex {
	return &sourceIndex{pl: pl, drafts: drafts, bySource: make([]map[int][]int, len(drafts)), hub: map[[2]int]map[string]struct{}{}}
}

func (x *sourceIndex) of(t *source) map[int][]int {
	if m := x.bySource[t.idx]; m != nil {
		return m
	}
	m := map[int][]int{}
	for i, p := range x.drafts[t.idx].desired {
		if si, ok := x.pl.byName[p.Labels[LabelSourceCluster]]; ok {
			m[si] = append(m[si], i)
		}
	}
	x.bySource[t.idx] = m
	return m
}

// named reports whether t's desired Peers include one of that name, and
// whether it is kept as it is.
func (x *sourceIndex) named(t *source, name string) (held, kept bool) {
	d := x.drafts[t.idx]
	_, held = slices.BinarySearchFunc(d.desired, name, func(p *kilov1alpha1.Peer, n string) int { return strings.Compare(p.Name, n) })
	return held, held && d.kept[name]
}

// keptOf reports whether t keeps a Peer of s as it is.
func (x *sourceIndex) keptOf(t, s *source) bool {
	d := x.drafts[t.idx]
	for _, i := range x.of(t)[s.idx] {
		if d.kept[d.desired[i].Name] {
			return true
		}
	}
	return false
}

// carried is what relay h can carry of source s to spoke t: what t could
// hold of s's ready groups (draft.relayable) that h holds too, since h
// forwards to the Peers of s it holds, in t's order. While s cannot be
// observed (unreachable, or no ready group) nothing of it is planned; then
// t's share is what its Peers of h carry inside s's declared networks now,
// so that the relay keeps carrying it, as a Peer of s would be kept.
func (x *sourceIndex) carried(t, s, h *source) []string {
	hub := x.hubSet(h, s)
	if len(hub) == 0 {
		return nil
	}
	var out []string
	for _, p := range x.drafts[t.idx].relayable[s.idx] {
		for _, a := range p.Spec.AllowedIPs {
			if _, ok := hub[a]; ok {
				out = append(out, a)
			}
		}
	}
	if s.keepReason == "" {
		return out
	}
	for _, p := range x.drafts[t.idx].managed {
		if p.Labels[LabelSourceCluster] != h.name {
			continue
		}
		for _, a := range p.Spec.AllowedIPs {
			if _, ok := hub[a]; !ok {
				continue
			}
			if q, err := netip.ParsePrefix(a); err == nil && validation.Within(canonical(q), s.nets.all) && !x.pl.declaredElsewhere(canonical(q), s) {
				out = append(out, a)
			}
		}
	}
	return out
}

// hubSet is the set of addresses relay h holds of source s: every Peer of
// s it will hold, kept or not.
func (x *sourceIndex) hubSet(h, s *source) map[string]struct{} {
	key := [2]int{h.idx, s.idx}
	if m, ok := x.hub[key]; ok {
		return m
	}
	d := x.drafts[h.idx]
	n := 0
	for _, i := range x.of(h)[s.idx] {
		n += len(d.desired[i].Spec.AllowedIPs)
	}
	m := make(map[string]struct{}, n)
	for _, i := range x.of(h)[s.idx] {
		for _, a := range d.desired[i].Spec.AllowedIPs {
			m[a] = struct{}{}
		}
	}
	x.hub[key] = m
	return m
}

// declaredElsewhere reports whether q overlaps the declared networks of a
// cluster other than s: then whose it is cannot be told from the address.
func (pl *planner) declaredElsewhere(q netip.Prefix, s *source) bool {
	for _, o := range pl.sources {
		if o != s && pl.overlap[o.idx][s.idx] {
			if _, ok := overlapsAny(q, o.nets.all); ok {
				return true
			}
		}
	}
	return false
}
