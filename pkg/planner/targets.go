package planner

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// existingPeers is what a target cluster holds now.
type existingPeers struct {
	managed       []*kilov1alpha1.Peer // sorted by name
	foreign       []*kilov1alpha1.Peer
	foreignByName map[string]*kilov1alpha1.Peer // nil when there are none
	foreignKeys   map[string]struct{}
}

// managedNamed returns the managed Peer of that name, if any.
func (x *existingPeers) managedNamed(name string) *kilov1alpha1.Peer {
	if i, ok := slices.BinarySearchFunc(x.managed, name, func(p *kilov1alpha1.Peer, n string) int { return strings.Compare(p.Name, n) }); ok {
		return x.managed[i]
	}
	return nil
}

func (pl *planner) existing(snap *ClusterSnapshot) existingPeers {
	var x existingPeers
	peers := snap.Peers.Slice()
	// Names are unique on a live cluster; the tie-break only keeps a
	// malformed snapshot from making the plan depend on input order.
	slices.SortFunc(peers, func(a, b *kilov1alpha1.Peer) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.ResourceVersion, b.ResourceVersion), strings.Compare(string(a.UID), string(b.UID)),
			strings.Compare(a.Labels[LabelMeshUID], b.Labels[LabelMeshUID]), strings.Compare(a.Spec.PublicKey, b.Spec.PublicKey),
			slices.Compare(a.Spec.AllowedIPs, b.Spec.AllowedIPs))
	})
	peers = slices.CompactFunc(peers, func(a, b *kilov1alpha1.Peer) bool { return a.Name == b.Name })
	for _, p := range peers {
		if IsManagedBy(p, pl.in.MeshNamespace, pl.in.MeshName, pl.in.MeshUID) {
			x.managed = append(x.managed, p)
			continue
		}
		if x.foreignByName == nil {
			x.foreignByName = make(map[string]*kilov1alpha1.Peer)
			x.foreignKeys = make(map[string]struct{})
		}
		x.foreign = append(x.foreign, p)
		x.foreignByName[p.Name] = p
		x.foreignKeys[p.Spec.PublicKey] = struct{}{}
	}
	return x
}

// keptPeer is a managed Peer left exactly as it is.
type keptPeer struct {
	peer   *kilov1alpha1.Peer
	source string
	reason string
}

// planTarget computes the Peers one cluster must hold, before relaying.
func (pl *planner) planTarget(t *source) *draft {
	tp := meshv1alpha1.TargetPlan{Cluster: t.name, DiffState: meshv1alpha1.DiffStateUnknown}
	var x existingPeers
	if t.reachable {
		tp.DiffState = meshv1alpha1.DiffStateComputed
		x = pl.existing(t.snapshot)
	}
	if pl.held != nil {
		pl.held[t.idx] = x
	}

	// Peers representing a cluster that cannot be observed stay as they are:
	// no Peer is deleted or rewritten on a guess.
	var kept []keptPeer
	if pl.anyKept {
		for _, p := range x.managed {
			si, ok := pl.byName[p.Labels[LabelSourceCluster]]
			if ok && si != t.idx && pl.sources[si].keepReason != "" {
				kept = append(kept, keptPeer{p, pl.sources[si].name, pl.sources[si].keepReason})
			}
		}
	}

	d := &draft{kept: map[string]bool{}, managed: x.managed}
	if len(kept) == 0 && len(x.foreign) == 0 && !pl.keyClashes && !pl.overlapsOthers[t.idx] && !pl.hostRestricted && len(pl.in.OtherMeshClaims[t.name]) == 0 && !pl.natPeers(t) {
		d.desired = pl.allBut(t)
	} else {
		pl.checked(t, &x, kept, &tp, d)
	}
	slices.SortFunc(tp.Kept, func(a, b meshv1alpha1.KeptPeer) int { return strings.Compare(a.Name, b.Name) })
	d.desired = pl.limitHostPeers(t, d.desired, d.kept)
	d.tp = tp
	return d
}

// allBut is every export's Peer except those of t: on a target with no
// kept or foreign Peers, no key clash and no overlapping declarations, that
// is the whole plan. The templates themselves are listed, not copies, in
// runs rather than Peer by Peer.
func (pl *planner) allBut(t *source) []*kilov1alpha1.Peer {
	desired := make([]*kilov1alpha1.Peer, 0, len(pl.templates)-pl.readyExports[t.idx])
	start := 0
	for i, e := range pl.order {
		if e.src == t.idx {
			desired = append(desired, pl.templates[start:i]...)
			start = i + 1
		}
	}
	return append(desired, pl.templates[start:]...)
}

// checked plans target t export by export into d: withholding those whose
// name or key collides, keeping or trimming the kept Peers, and filtering
// the addresses that overlap the target's networks or a frozen address.
// Between two clusters behind NAT nothing is planned: what would be is
// only recorded as relayable.
func (pl *planner) checked(t *source, x *existingPeers, kept []keptPeer, tp *meshv1alpha1.TargetPlan, d *draft) {
	keptNames := d.kept
	candidates := make([]int, 0, len(pl.order))
	var relayed []int
	for i, e := range pl.order {
		if e.src == t.idx {
			continue
		}
		if pl.hostDenied(pl.sources[e.src], t) {
			// A policy decision: the Peer goes, also if it exists.
			reason, lead := pl.hostConflict()
			pl.issues.conflict(reason, pl.sources[e.src].name, t.name, lead, e.name)
			continue
		}
		if pl.natPair(t, pl.sources[e.src]) {
			// Its key, name and endpoint never reach t: a relay's Peer does.
			relayed = append(relayed, i)
			continue
		}
		if pl.refusedEndpoint(t, e) {
			continue // a policy decision, like host access: the Peer goes
		}
		if reason, lead, item := pl.withheld(t, e, x); reason != "" {
			pl.issues.conflict(reason, pl.sources[e.src].name, t.name, lead, item)
			if m := x.managedNamed(e.name); m != nil {
				kept = append(kept, keptPeer{m, pl.sources[e.src].name, reason})
			}
			continue
		}
		candidates = append(candidates, i)
	}

	desired := make([]*kilov1alpha1.Peer, 0, len(candidates)+len(kept))
	for _, k := range kept {
		p, ok := pl.keep(t, k, tp, keptNames)
		if !ok {
			continue
		}
		if !keptNames[p.Name] {
			if pl.natPair(t, pl.sources[pl.byName[k.source]]) {
				continue // changed, so no longer kept: and between these two, no Peer
			}
			if d.trimmed == nil {
				d.trimmed = map[string]bool{}
			}
			d.trimmed[p.Name] = true
		}
		desired = append(desired, &p)
	}
	frozen, owners := pl.frozen(desired, x.foreign)
	for _, i := range relayed {
		e := pl.order[i]
		if p, ok := pl.forTarget(t, e, pl.templates[i], frozen, owners); ok {
			if d.relayable == nil {
				d.relayable = map[int][]*kilov1alpha1.Peer{}
			}
			d.relayable[e.src] = append(d.relayable[e.src], p)
		}
	}
	for _, i := range candidates {
		e := pl.order[i]
		if _, bounded := pl.hostBound(pl.sources[e.src], t); !bounded && !pl.overlap[e.src][t.idx] && frozen == nil && pl.otherMeshIndex(t, pl.sources[e.src]) == nil {
			desired = append(desired, pl.templates[i])
			continue
		}
		// An export left with no address is not planned, and its old Peer
		// goes: what it claimed is observably someone else's now.
		if p, ok := pl.forTarget(t, e, pl.templates[i], frozen, owners); ok {
			desired = append(desired, p)
		}
	}
	// Exports come in name order; kept Peers were added in front of them.
	if len(kept) > 0 {
		slices.SortFunc(desired, func(a, b *kilov1alpha1.Peer) int { return strings.Compare(a.Name, b.Name) })
	}
	d.desired = desired
}

// containKept applies containment to a kept Peer: the addresses that lie
// outside its source's declared networks, overlap the target's, or lie
// outside what host access allows are removed, since the spec and the
// grants say so whether or not the source can be seen. It reports false
// when something was removed.
func (pl *planner) containKept(t *source, k keptPeer) (kilov1alpha1.Peer, bool) {
	p := keptCopy(k.peer)
	src := pl.sources[pl.byName[k.source]]
	bound, bounded := pl.hostBound(src, t)
	relayed := pl.keptRelayed(t, src, &p)
	var keep []string
	for _, s := range p.Spec.AllowedIPs {
		q, err := netip.ParsePrefix(s)
		if err != nil {
			keep = append(keep, s) // Validate reports it
			continue
		}
		q = canonical(q)
		why := ""
		reason, lead := ConflictOverlapsTargetNetwork, "addresses of kept Peers that the mesh's networks no longer allow; removed"
		if o, ok := overlapsAny(q, t.nets.all); ok {
			why = fmt.Sprintf("%s of kept Peer %s overlaps %s of the target", s, p.Name, o)
		} else if !validation.Within(q, src.nets.all) && !validation.Within(q, relayed) {
			why = fmt.Sprintf("%s of kept Peer %s lies outside the networks declared for %s", s, p.Name, src.name)
		} else if bounded && !validation.Within(q, bound) {
			why = fmt.Sprintf("%s of kept Peer %s", s, p.Name)
			reason, lead = pl.hostConflict()
		} else if _, _, ok := pl.otherMeshIndex(t, src).overlap(q); ok {
			why = fmt.Sprintf("%s of kept Peer %s", s, p.Name)
			reason, lead = ConflictCIDRClaimedByOtherMesh, otherMeshLead
		}
		if why == "" {
			keep = append(keep, s)
			continue
		}
		pl.issues.conflict(reason, src.name, t.name, lead, why)
	}
	if len(keep) == len(p.Spec.AllowedIPs) {
		return p, true
	}
	p.Spec.AllowedIPs = keep
	pl.relistRelays(t, src, &p)
	return p, false
}

// withheld says why an export must not be planned on target t at all.
func (pl *planner) withheld(t *source, e *export, x *existingPeers) (reason, lead, item string) {
	g := pl.sources[e.src].groups[e.group].name
	if f := x.foreignByName[e.name]; f != nil {
		item = fmt.Sprintf("%s (group %s): a Peer this mesh does not manage has the name", e.name, g)
		if f.Labels[LabelMeshNamespace] == pl.in.MeshNamespace && f.Labels[LabelMeshName] == pl.in.MeshName {
			item = fmt.Sprintf("%s (group %s) was left by an earlier ClusterMesh of the same name (mesh-uid %s); delete it", e.name, g, memberText(f.Labels[LabelMeshUID]))
		}
		return ConflictNameTaken, "Peer names already taken by Peers this mesh does not manage; not planned", item
	}
	if slices.Contains(e.keyClusters, t.idx) {
		return ConflictPublicKeyOfTargetNode, "groups whose leader's public key is also the key of a node of the target; not planned",
			fmt.Sprintf("group %s (leader key %s)", g, e.key)
	}
	shared := 0
	for _, o := range e.keyShared {
		if o != e && o.src != t.idx {
			shared++
		}
	}
	if shared > 0 {
		return ConflictDuplicatePublicKey, "groups of different clusters whose leaders share one public key; kg keys peers by public key, so none of them is planned",
			fmt.Sprintf("group %s (leader key %s)", g, e.key)
	}
	if _, ok := x.foreignKeys[e.key]; ok {
		return ConflictPublicKeyInUse, "groups whose leader's public key is already used by a Peer this mesh does not manage; kg keys peers by public key, so they are not planned",
			fmt.Sprintf("group %s (leader key %s)", g, e.key)
	}
	return "", "", ""
}

// keep decides what becomes of a kept Peer on target t. Intact, it is
// listed as kept and carried over unchanged (unless kg would reject it:
// then it is only left alone). If containment removed addresses, it is no
// longer kept as it is: the trimmed Peer is planned like any other, and
// deleted when nothing is left.
func (pl *planner) keep(t *source, k keptPeer, tp *meshv1alpha1.TargetPlan, keptNames map[string]bool) (kilov1alpha1.Peer, bool) {
	p, intact := pl.containKept(t, k)
	if !intact {
		if len(p.Spec.AllowedIPs) == 0 || len(p.Validate()) > 0 {
			return kilov1alpha1.Peer{}, false
		}
		return p, true
	}
	keptNames[p.Name] = true
	tp.Kept = append(tp.Kept, meshv1alpha1.KeptPeer{Name: p.Name, SourceCluster: k.source, Reason: k.reason})
	if errs := p.Validate(); len(errs) > 0 {
		// kg ignores it already; leaving it alone changes nothing.
		pl.issues.conflict(ConflictInvalidPeer, k.source, t.name, "kept Peers that break Kilo's validation; kg ignores them and the plan does not apply them", fmt.Sprintf("%s: %v", p.Name, errs.ToAggregate()))
		return kilov1alpha1.Peer{}, false
	}
	return p, true
}

// forTarget is the export's Peer on target t: the template itself, unless
// some of its addresses lie outside what host access lets cross between
// the two, overlap the target's own networks or a frozen address; then a
// copy of it with fewer addresses. It reports false when no address is left.
func (pl *planner) forTarget(t *source, e *export, template *kilov1alpha1.Peer, frozen *prefixIndex, owners []frozenOwner) (*kilov1alpha1.Peer, bool) {
	checkTarget := pl.overlap[e.src][t.idx]
	s := pl.sources[e.src]
	bound, bounded := pl.hostBound(s, t)
	claimed := pl.otherMeshIndex(t, s)
	var keep []string
	dropping := false
	for i, c := range e.final {
		reason, lead, item := "", "", ""
		if bounded && !validation.Within(c.prefix, bound) {
			reason, lead = pl.hostConflict()
			item = pl.describe(s, e, c)
		}
		if reason == "" && checkTarget {
			if q, ok := overlapsAny(c.prefix, t.nets.all); ok {
				reason, lead = ConflictOverlapsTargetNetwork, "addresses that overlap networks of the target cluster; left out of its Peers"
				item = fmt.Sprintf("%s overlaps %s", pl.describe(s, e, c), q)
			}
		}
		if reason == "" {
			if _, _, ok := claimed.overlap(c.prefix); ok {
				reason, lead, item = ConflictCIDRClaimedByOtherMesh, otherMeshLead, pl.describe(s, e, c)
			}
		}
		if reason == "" && frozen != nil {
			if _, o, ok := frozen.overlap(c.prefix); ok {
				if owners[o].kept {
					reason, lead = ConflictCIDRClaimedByKept, "addresses still claimed by kept Peers on the target; left out until those are updated or deleted"
					item = fmt.Sprintf("%s overlaps kept Peer %s", pl.describe(s, e, c), owners[o].name)
				} else {
					reason, lead = ConflictCIDRClaimedByForeign, "addresses already claimed by Peers this mesh does not manage on the target; left out of its Peers"
					item = pl.describe(s, e, c)
				}
			}
		}
		if reason == "" {
			if dropping {
				keep = append(keep, template.Spec.AllowedIPs[i])
			}
			continue
		}
		pl.issues.conflict(reason, s.name, t.name, lead, item)
		if !dropping {
			dropping = true
			keep = append(make([]string, 0, len(e.final)-1), template.Spec.AllowedIPs[:i]...)
		}
	}
	if !dropping {
		return template, true
	}
	if len(keep) == 0 {
		pl.issues.conflict(ConflictEmptyPeer, s.name, t.name, "Peers with no address left for the target; not planned", e.name)
		return nil, false
	}
	p := *template // shares the template's labels and annotations, read-only
	p.Spec.AllowedIPs = keep
	return &p, true
}
