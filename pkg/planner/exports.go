package planner

import (
	"fmt"
	"hash/fnv"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// claimKind says where an address of a Peer comes from, for the order kg
// uses and for messages.
type claimKind uint8

const (
	claimPod         claimKind = iota // a node's spec.podCIDR
	claimPodExtra                     // another entry of a node's spec.podCIDRs
	claimInternalIP                   // a node's internal IP, as a host route
	claimWireGuardIP                  // the group's WireGuard IP, as a host route
	claimLocationIP                   // an allowed-location-ips entry of the group
	claimExtra                        // the cluster's serviceCIDR or additionalCIDRs
)

// claim is one address a group would put into its Peer.
type claim struct {
	prefix netip.Prefix
	// node indexes the source's nodes, -1 for addresses of the group or cluster.
	node    int32
	kind    claimKind
	dropped bool
}

// export is one group of a source cluster as a Peer for the other clusters.
type export struct {
	src   int
	group int
	name  string
	key   string

	endpoint  Endpoint
	keepalive int
	// hostPort is endpoint.String(), set once the export is final.
	hostPort string

	// claims are the candidate addresses, in kg's order.
	claims []claim
	// final are the addresses that survived every mesh-wide check; the
	// template's AllowedIPs are their string forms.
	final []claim

	ready           bool
	reason, message string
	// peer is the template: the Peer every target gets unless a
	// target-specific check removes something. It is shared by those
	// targets' lists, so it is never modified once built.
	peer *kilov1alpha1.Peer

	// keyClusters are the clusters with a node holding this key, when
	// there are several (the source is one of them).
	keyClusters []int
	// keyShared are the ready exports with this key, when there are
	// several (this one is one of them).
	keyShared []*export
}

// fail marks the export not ready; the first reason found is kept.
func (e *export) fail(reason, message string) {
	if !e.ready {
		return
	}
	e.ready, e.reason, e.message = false, reason, message
}

// prepareExport decides whether group gi can be exported and, if so, which
// addresses its members contribute: the pod CIDRs and internal IP of every
// member that passed containment, in name order, then the WireGuard IP.
// The claims take their room from the front of pool; the rest is returned.
func (pl *planner) prepareExport(s *source, gi int, pool []claim) []claim {
	g := &s.groups[gi]
	leader := &s.nodes[g.leader]
	e := &s.exports[gi]
	*e = export{src: s.idx, group: gi, ready: true, key: leader.key} // analyze names it

	switch {
	case !s.nets.wireguard.IsValid():
		e.fail(ReasonInvalidWireGuardCIDR, "the cluster's wireguardCIDR is missing or malformed, so the leader's WireGuard IP is unknown")
	case !g.wireguardIP.IsValid():
		e.fail(ReasonWireGuardCIDRExhausted, fmt.Sprintf("wireguardCIDR %s has no address left for group %d of %d; kg itself fails to build its topology", s.nets.wireguard, gi+1, len(s.groups)))
		pl.issues.conflict(ConflictWireGuardCIDRExhausted, s.name, "", fmt.Sprintf("wireguardCIDR %s is too small for the cluster's %d groups; groups without an address are left out", s.nets.wireguard, len(s.groups)), g.name)
	case leader.wireguardIP.IsValid() && !s.nets.wireguard.Contains(leader.wireguardIP.Addr()):
		e.fail(ReasonWireGuardIPOutsideCIDR, fmt.Sprintf("leader %s has %s=%s, outside the declared wireguardCIDR %s: kg runs with another --subnet than the mesh declares", leader.name, kilov1alpha1.AnnotationWireGuardIP, leader.wireguardIP, s.nets.wireguard))
		pl.issues.conflict(ConflictWireGuardIPOutsideCIDR, s.name, "", fmt.Sprintf("leaders whose %s lies outside the declared wireguardCIDR %s; their groups are left out", kilov1alpha1.AnnotationWireGuardIP, s.nets.wireguard), fmt.Sprintf("%s (%s)", leader.name, leader.wireguardIP))
	case leader.wireguardIP.IsValid() && leader.wireguardIP.Addr() != g.wireguardIP:
		// kg updates the annotation within 30s of a change of groups; a
		// lasting mismatch means the groups differ from what kg sees.
		pl.issues.warning(WarningWireGuardIPMismatch, s.name, "", "leaders whose WireGuard IP annotation differs from the computed one (normal for 30s after groups change)",
			fmt.Sprintf("%s has %s, computed %s", leader.name, leader.wireguardIP.Addr(), g.wireguardIP))
	}

	ep, epSource, keepalive, err := dialled(s, leader)
	if err != nil {
		e.fail(ReasonMalformedEndpoint, fmt.Sprintf("leader %s: %v", leader.name, err))
	}
	e.endpoint, e.keepalive = ep, keepalive
	if err == nil && ep.IsZero() && e.keepalive == 0 {
		e.fail(ReasonNoEndpointNoKeepalive, fmt.Sprintf("leader %s has no endpoint other clusters can dial and nothing asks them to accept a roaming one: set %s on the node, or persistentKeepalive for the cluster and %s on its nodes",
			leader.name, kilov1alpha1.AnnotationClusterMeshEndpoint, kilov1alpha1.AnnotationPersistentKeepalive))
	}
	if e.ready {
		keepalive, private := endpointWarnings(s, leader, ep, epSource)
		if keepalive != "" {
			pl.issues.warning(WarningKeepaliveNotSent, s.name, "", fmt.Sprintf("leaders of a roaming or NATed cluster that send no keepalives: set %s on them, or the tunnel closes when idle", kilov1alpha1.AnnotationPersistentKeepalive), keepalive)
		}
		if private != "" {
			pl.issues.warning(WarningPrivateEndpoint, s.name, "", "endpoints that are private addresses; other clusters reach them only over a private network", private)
		}
	}

	size := 1 // the WireGuard IP
	for _, i := range g.members {
		size += len(s.nodes[i].podCIDRs) + 1
	}
	// Capped, so that appending to one export's claims cannot reach the next's.
	e.claims, pool = pool[:0:size], pool[size:]
	for _, i := range g.members {
		n := &s.nodes[i]
		if n.reason != "" {
			continue
		}
		e.claims = append(e.claims, claim{prefix: n.podCIDRs[0], kind: claimPod, node: int32(i)})
		for _, p := range n.podCIDRs[1:] {
			if validation.Within(p, s.nets.pod) {
				e.claims = append(e.claims, claim{prefix: p, kind: claimPodExtra, node: int32(i)})
			}
		}
		if n.internalIP.IsValid() && validation.Within(hostPrefix(n.internalIP), s.nets.node) {
			e.claims = append(e.claims, claim{prefix: hostPrefix(n.internalIP), kind: claimInternalIP, node: int32(i)})
		}
	}
	if g.wireguardIP.IsValid() {
		e.claims = append(e.claims, claim{prefix: hostPrefix(g.wireguardIP), kind: claimWireGuardIP, node: -1})
	}
	return pool
}

// endpointWarnings are the items of the warnings a ready export's leader
// and endpoint give, "" for none: incremental planning compares them.
func endpointWarnings(s *source, leader *nodeInfo, ep Endpoint, epSource string) (keepalive, private string) {
	if natted := ep.IsZero() || s.entry.PersistentKeepalive > 0; natted && leader.keepalive == 0 {
		keepalive = leader.name
	}
	if ep.Addr.IsValid() && !ep.IsPublic() {
		private = fmt.Sprintf("%s (leader %s, from %s)", ep, leader.name, epSource)
	}
	return keepalive, private
}

// finalize runs after the mesh-wide claim check: it drops the addresses
// that check rejected, decides which groups are exported, attaches the
// extra networks, builds the Peer templates and the cluster's view.
func (pl *planner) finalize(s *source) {
	for ei := range s.exports {
		e := &s.exports[ei]
		var members int
		for _, i := range s.groups[e.group].members {
			if s.nodes[i].reason == "" {
				members++
			}
		}
		if members == 0 {
			e.fail(ReasonNoAdvertisedMember, "no member of the group passed the checks, so there is nothing to advertise")
		}
		if !e.ready {
			continue
		}
		// The claims are not needed once the mesh-wide check is done, so
		// the survivors are compacted in place.
		e.final = e.claims[:0]
		for _, c := range e.claims {
			if !c.dropped && (c.node < 0 || s.nodes[c.node].reason == "") {
				e.final = append(e.final, c)
			}
		}
		e.claims = nil
	}
	s.extrasHolder = pl.chooseExtrasHolder(s)
	n := len(s.extras)
	for ei := range s.exports {
		n += len(s.exports[ei].final)
	}
	allowed := pl.batch(n+len(s.exports), len("255.255.255.255/32"))
	for ei := range s.exports {
		e := &s.exports[ei]
		if !e.ready {
			continue
		}
		if ei == s.extrasHolder {
			for _, c := range s.extras {
				if !c.dropped {
					e.final = append(e.final, c)
				}
			}
		}
		for _, c := range e.final {
			allowed.buf = c.prefix.AppendTo(allowed.buf)
			allowed.end()
		}
		// The endpoint comes last: one more string per export.
		allowed.buf = e.endpoint.appendTo(allowed.buf)
		allowed.end()
	}
	strs := allowed.strings()
	ready := 0
	for ei := range s.exports {
		if s.exports[ei].ready {
			ready++
		}
	}
	// One array holds the templates of the cluster, one their endpoints.
	templates := make([]kilov1alpha1.Peer, 0, ready)
	endpoints := make([]kilov1alpha1.PeerEndpoint, 0, ready)
	for ei := range s.exports {
		if e := &s.exports[ei]; e.ready {
			templates = append(templates, kilov1alpha1.Peer{})
			e.peer = &templates[len(templates)-1]
			endpoints = append(endpoints, kilov1alpha1.PeerEndpoint{})
			// Capped, so that appending to one Peer's list cannot reach the next's.
			allowedIPs := strs[:len(e.final):len(e.final)]
			e.hostPort = strs[len(e.final)]
			strs = strs[len(e.final)+1:]
			pl.buildTemplate(s, e, allowedIPs, &endpoints[len(endpoints)-1])
		}
	}
	if len(s.extras) > 0 && s.extrasHolder < 0 {
		pl.issues.warning(WarningExtraNetworksUnattached, s.name, "", "no group is ready to carry the serviceCIDR and additionalCIDRs; they are not advertised", "")
	}
	s.view = pl.clusterView(s)
	if s.view.Summary.ReadyGroups == 0 {
		// A cluster whose every node looks dead at once is more likely seen
		// through a skewed clock or a kg outage than gone: keep its Peers.
		s.keepReason = KeptNoReadyGroups
		pl.issues.warning(WarningNoReadyGroups, s.name, "", "the cluster has no group ready to export; the Peers representing it elsewhere are kept as they are", "")
	}
}

// chooseExtrasHolder picks, among the ready exports, the one with the
// highest rendezvous hash of its group name: deterministic, and a change of
// groups moves the extra networks only when their holder stops being ready
// or a newcomer outranks it.
func (pl *planner) chooseExtrasHolder(s *source) int {
	if len(s.extras) == 0 {
		return -1
	}
	best, bestScore := -1, uint64(0)
	for ei := range s.exports {
		if !s.exports[ei].ready {
			continue
		}
		if score := rendezvous(s.name, s.groups[ei].name); best < 0 || score > bestScore {
			best, bestScore = ei, score
		}
	}
	return best
}

// rendezvous is the highest-random-weight score of a group for its cluster.
func rendezvous(cluster, group string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(cluster))
	h.Write([]byte{0})
	h.Write([]byte(group))
	return h.Sum64()
}

// buildTemplate renders an export, into e.peer, as the Peer every target
// gets unless a target-specific check removes something. endpoint is where
// to put the Peer's endpoint, if it has one.
func (pl *planner) buildTemplate(s *source, e *export, allowed []string, endpoint *kilov1alpha1.PeerEndpoint) {
	g := &s.groups[e.group]
	// e.peer is zero, in the cluster's template array: filled in place.
	p := e.peer
	p.TypeMeta = peerTypeMeta
	p.Name, p.Labels = e.name, s.labels
	p.Annotations = map[string]string{
		AnnotationSourceGroup:  g.name,
		AnnotationSourceLeader: s.nodes[g.leader].name,
	}
	p.Spec = kilov1alpha1.PeerSpec{
		AllowedIPs:          allowed,
		Endpoint:            e.endpoint.peerEndpoint(endpoint, e.hostPort),
		PersistentKeepalive: e.keepalive,
		PublicKey:           e.key,
	}
	if errs := e.peer.Validate(); len(errs) > 0 {
		e.fail(ConflictInvalidPeer, fmt.Sprintf("the Peer would break Kilo's rules: %v", errs.ToAggregate()))
		pl.issues.conflict(ConflictInvalidPeer, s.name, "", "Peers that would break Kilo's validation; left out", fmt.Sprintf("group %s: %v", g.name, errs.ToAggregate()))
	}
}

var peerTypeMeta = metav1.TypeMeta{APIVersion: kilov1alpha1.SchemeGroupVersion.String(), Kind: kilov1alpha1.PeerKind}

// describe names the origin of a claim for messages.
func (pl *planner) describe(s *source, e *export, c claim) string {
	where := ""
	switch c.kind {
	case claimPod, claimPodExtra:
		where = "pod CIDR of node " + s.nodes[c.node].name
	case claimInternalIP:
		where = "internal IP of node " + s.nodes[c.node].name
	case claimWireGuardIP:
		where = "WireGuard IP of group " + s.groups[e.group].name
	case claimLocationIP:
		where = "allowed-location-ips of group " + s.groups[e.group].name
	case claimExtra:
		return fmt.Sprintf("%s (serviceCIDR/additionalCIDRs of cluster %s)", c.prefix, s.name)
	}
	return fmt.Sprintf("%s (%s, cluster %s)", c.prefix, where, s.name)
}
