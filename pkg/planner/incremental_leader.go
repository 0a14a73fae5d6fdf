package planner

import (
	"slices"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// reexport re-exports group gi of s after node changed (was is that node as
// it was), its leader now s.groups[gi].leader, before from. The group's
// Peer takes its leader's key, endpoint and keepalive; when the leader
// moved, also its name, and the group's members their messages. False when
// more than that may change.
func (u *patch) reexport(s *source, gi, from, changed int, was *nodeInfo) bool {
	st, pl := u.st, u.st.pl
	g, e := &s.groups[gi], &s.exports[gi]
	n, prev := &s.nodes[g.leader], &s.nodes[from]
	if changed == from {
		prev = was
	}
	moved := g.leader != from
	if !e.ready || st.hostLimited || (moved && !u.leaderMayMove(prev, n, &s.nodes[from])) {
		return false
	}
	ep, epSource, keepalive, err := dialled(s, n)
	if err != nil {
		return false
	}
	if ep.IsZero() && keepalive == 0 {
		return false
	}
	// The warnings name the leader: equal, or none when it moved.
	prevEP, prevSource, _, _ := dialled(s, prev)
	k0, p0 := endpointWarnings(s, prev, prevEP, prevSource)
	k1, p1 := endpointWarnings(s, n, ep, epSource)
	if k0 != k1 || p0 != p1 || (moved && k0+p0 != "") {
		return false
	}
	if !moved && n.key == e.key && ep == e.endpoint && keepalive == e.keepalive {
		return true // the same Peer
	}
	if st.hasLocal && (pl.refusedEndpoints[e] != "" || pl.endpointRefusal(e, ep) != "") {
		return false
	}
	if _, inUse := st.foreignKeys[e.key]; inUse || e.keyClusters != nil || e.keyShared != nil {
		return false // withheld somewhere for its key, its managed Peer kept
	}
	old := e.peer
	hostPort := ep.String()
	p := *old // shares labels, annotations and addresses, which stay
	p.Spec.PublicKey = n.key
	p.Spec.Endpoint = ep.peerEndpoint(&kilov1alpha1.PeerEndpoint{}, hostPort)
	p.Spec.PersistentKeepalive = keepalive
	if moved {
		p.Annotations = map[string]string{AnnotationSourceGroup: g.name, AnnotationSourceLeader: n.name}
	}
	if len(p.Validate()) > 0 {
		return false
	}
	for _, t := range pl.sources {
		_, taken := pl.held[t.idx].foreignByName[e.name]
		kept := slices.ContainsFunc(u.plan.View.Targets[t.idx].Kept, func(k meshv1alpha1.KeptPeer) bool { return k.Name == e.name })
		if t.idx != s.idx && (taken || kept) {
			return false // withheld there, its managed Peer kept
		}
	}
	e.key, e.endpoint, e.keepalive, e.hostPort, e.peer = n.key, ep, keepalive, hostPort, &p
	if k, ok := slices.BinarySearchFunc(pl.order, e.name, func(x *export, name string) int { return strings.Compare(x.name, name) }); ok {
		pl.templates[k] = &p
	}
	if v, _ := u.plan.Groups[s.name].Get(g.name, groupPlanName); moved || v.Endpoint != hostPort || v.PersistentKeepalive != int32(keepalive) {
		w := *v // shares its members, which stay
		w.Leader, w.Endpoint, w.PersistentKeepalive = n.name, hostPort, int32(keepalive)
		u.plan.Groups[s.name] = u.plan.Groups[s.name].With(&w, groupPlanName)
	}
	if moved {
		u.ledBy(s, gi, from)
	}
	u.replaceOnTargets(s, e, old, &p)
	return true
}

// leaderMayMove reports whether a group's leadership may move from prev
// (as it was; now, as it is) to n without more than the group's Peer and
// its members' messages changing: both are advertised, neither has notes
// that depend on leading (a WireGuard IP annotation, a clustermesh-endpoint
// that does not parse), and n's key is its own alone.
func (u *patch) leaderMayMove(prev, n, now *nodeInfo) bool {
	st := u.st
	for _, x := range []*nodeInfo{prev, n, now} {
		if x.reason != "" || x.wireguardIP.IsValid() {
			return false
		}
		if v := x.node.Annotations[kilov1alpha1.AnnotationClusterMeshEndpoint]; v != "" && v != "-" {
			if _, err := ParseEndpoint(v); err != nil {
				return false
			}
		}
	}
	_, inUse := st.foreignKeys[n.key]
	return !st.pl.keyClashes && !inUse && st.keys[n.key] == 1
}

// ledBy rewrites the roles and messages of group gi's members after its
// leadership moved from node from, as clusterView writes them.
func (u *patch) ledBy(s *source, gi, from int) {
	g, e := &s.groups[gi], &s.exports[gi]
	idx := g.members
	if !slices.Contains(idx, from) {
		idx = append(slices.Clone(idx), from)
	}
	u.decide(s, idx, func(i int, d *meshv1alpha1.NodeDecision) {
		switch i {
		case from:
			d.Role = meshv1alpha1.NodeRoleMember
		case g.leader:
			d.Role = meshv1alpha1.NodeRoleLeader
		}
		switch {
		case !slices.Contains(g.members, i) || !d.Included:
		case i == g.leader:
			d.Message = "leads " + g.name + ", exported as Peer " + e.name
		default:
			d.Message = "advertised through " + g.name + ", led by " + s.nodes[g.leader].name
		}
	})
}

// replaceOnTargets puts the group's new Peer p where its old one was
// planned, trimmed as the old one was, and moves its diff entries.
func (u *patch) replaceOnTargets(s *source, e *export, old, p *kilov1alpha1.Peer) {
	for _, t := range u.st.pl.sources {
		if t.idx == s.idx {
			continue
		}
		was, ok := u.plan.DesiredPeers[t.name].Get(e.name, peerName)
		if !ok {
			continue // not planned there: withheld by policy, or no address left
		}
		now := p
		if was != old {
			q := *p // trimmed for the target as before: its addresses stay
			q.Spec.AllowedIPs = was.Spec.AllowedIPs
			now = &q
		}
		u.plan.DesiredPeers[t.name] = u.plan.DesiredPeers[t.name].With(now, peerName)
		u.plan.Carried[t.name] = recarry(u.plan.Carried[t.name], was, now)
		if t.reachable {
			u.rediff(t, e.name, now)
		}
	}
}
