package planner

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// source is one member cluster seen as a source of Peers.
type source struct {
	idx   int
	name  string
	entry *meshv1alpha1.ClusterEntry
	nets  networks

	reachable bool
	err       string
	snapshot  *ClusterSnapshot
	// keepReason, when set, says why the Peers representing this cluster
	// elsewhere are kept exactly as they are instead of being planned.
	keepReason string

	gran    granularityDecision
	nodes   []nodeInfo
	groups  []group
	exports []export // aligned with groups
	// extras are the serviceCIDR and additionalCIDRs, attached to one export.
	extras       []claim
	extrasHolder int // index into exports, -1 when none

	labels map[string]string
	view   meshv1alpha1.ClusterPlan
}

// analyze reads the snapshot of a reachable cluster: nodes as kg sees them,
// granularity, groups, leaders, WireGuard IPs, node containment, and one
// export candidate per group with the addresses it would claim.
func (pl *planner) analyze(s *source, snap *ClusterSnapshot) {
	nodes := make([]*corev1.Node, 0, len(snap.Nodes))
	for _, n := range snap.Nodes {
		if n != nil {
			nodes = append(nodes, n)
		}
	}
	slices.SortStableFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })

	topologyLabel := s.entry.TopologyLabel
	if topologyLabel == "" {
		topologyLabel = meshv1alpha1.DefaultTopologyLabel
	}
	s.nodes = make([]nodeInfo, len(nodes))
	// One array holds every node's pod CIDRs.
	size := 0
	for _, node := range nodes {
		size += max(1, len(node.Spec.PodCIDRs))
	}
	podCIDRs := make([]netip.Prefix, size)
	for i, node := range nodes {
		if (i > 0 && nodes[i-1].Name == node.Name) || (i+1 < len(nodes) && nodes[i+1].Name == node.Name) {
			// Which copy is right is unknowable, and picking one would make
			// the plan depend on input order.
			s.nodes[i] = nodeInfo{name: node.Name, node: node}
			s.nodes[i].skip(ReasonDuplicateNode, "the snapshot holds this node name more than once")
			pl.issues.conflict(ConflictDuplicateNode, s.name, "", "node names that appear more than once in the snapshot; left out", node.Name)
			continue
		}
		podCIDRs = parseNodeInto(&s.nodes[i], node, topologyLabel, pl.in.Now, podCIDRs)
	}

	s.gran = decideGranularity(s.name, s.entry.Granularity, s.nodes)
	for _, w := range s.gran.warnings {
		pl.issues.addIssue(true, w)
	}
	s.groups = formGroups(s.nodes, s.gran.value)
	allocateWireGuardIPs(s.groups, s.nets.wireguard)

	pl.checkNodes(s)
	s.exports = make([]export, len(s.groups))
	names := pl.batch(len(s.groups), len(pl.in.MeshName)+len(s.name)+len(groupPrefixNode)+20+peerNameHashLen+3)
	// One array holds every export's candidate addresses: at most a node's
	// pod CIDRs and internal IP, and a WireGuard IP per group.
	size = len(s.groups)
	for i := range s.nodes {
		size += len(s.nodes[i].podCIDRs) + 1
	}
	claims := make([]claim, size)
	for gi := range s.groups {
		claims = pl.prepareExport(s, gi, claims)
		names.buf = appendPeerName(names.buf, pl.in.MeshNamespace, pl.in.MeshName, s.name, s.groups[gi].name)
		names.end()
	}
	all := names.text()
	for gi := range s.exports {
		s.exports[gi].name = names.at(all, gi)
	}
	pl.addLocationIPs(s)
	for _, p := range s.nets.extras() {
		s.extras = append(s.extras, claim{prefix: p, kind: claimExtra, node: -1})
	}
}

// checkNodes applies containment to every node Kilo counts: its pod CIDR must
// lie in the declared podCIDRs (else the node is skipped, though it stays in
// its Kilo group), extra pod CIDRs likewise (else left out), its internal IP
// in nodeCIDRs (else not advertised). Overlapping pod CIDRs within the
// cluster skip every node involved: which one is real is unknowable.
func (pl *planner) checkNodes(s *source) {
	type podRef struct {
		p    netip.Prefix
		node int
	}
	pods := make([]podRef, 0, len(s.nodes))
	for gi := range s.groups {
		g := &s.groups[gi]
		for _, i := range g.members {
			n := &s.nodes[i]
			if !within(n.podCIDRs[0], s.nets.pod) {
				n.skip(ReasonPodCIDROutsideDeclared, "spec.podCIDR %s lies outside the cluster's declared podCIDRs (%s)", n.podCIDRs[0], joinPrefixes(s.nets.pod))
			} else {
				pods = append(pods, podRef{n.podCIDRs[0], i})
			}
			for _, p := range n.podCIDRs[1:] {
				if !within(p, s.nets.pod) {
					n.note(NotePodCIDRNotAdvertised, "spec.podCIDRs entry %s lies outside the declared podCIDRs; not advertised", p)
					pl.issues.warning(WarningPodCIDRsNotAdvertised, s.name, "", "pod CIDRs outside the declared podCIDRs, not advertised (declare the other IP family to carry them)", fmt.Sprintf("%s of node %s", p, n.name))
				}
			}
			if n.internalIP.IsValid() && !within(hostPrefix(n.internalIP), s.nets.node) {
				if len(s.nets.node) == 0 {
					n.note(NoteInternalIPNotAdvertised, "internal IP %s is not advertised: the cluster declares no nodeCIDRs", n.internalIP)
				} else {
					n.note(NoteInternalIPNotAdvertised, "internal IP %s lies outside the declared nodeCIDRs (%s); not advertised", n.internalIP, joinPrefixes(s.nets.node))
				}
				pl.issues.warning(WarningInternalIPsNotAdvert, s.name, "", "internal IPs not advertised: they lie outside the declared nodeCIDRs, or none are declared", fmt.Sprintf("%s of node %s", n.internalIP, n.name))
			}
			if i != g.leader && n.wireguardIP.IsValid() {
				n.note(NoteStaleWireGuardIP, "%s=%s is left from a time the node led its group; kg clears it within 30s", kilov1alpha1.AnnotationWireGuardIP, n.wireguardIP)
			}
			if v := n.node.Annotations[kilov1alpha1.AnnotationClusterMeshEndpoint]; v != "" && v != "-" && i != g.leader {
				if _, err := ParseEndpoint(v); err != nil {
					n.note(NoteMalformedEndpoint, "%s: %v; it would stop the group's export if this node became leader", kilov1alpha1.AnnotationClusterMeshEndpoint, err)
				}
			}
			for _, note := range n.notes {
				if note.Reason == NoteMalformedAnnotation {
					pl.issues.warning(WarningMalformedAnnotations, s.name, "", "nodes with malformed Kilo annotations (see their notes)", n.name)
				}
			}
		}
	}
	slices.SortFunc(pods, func(a, b podRef) int { return comparePrefix(a.p, b.p) })
	open := -1
	var openLast netip.Addr
	for k := range pods {
		if open >= 0 && pods[k].p.Addr().Compare(openLast) <= 0 {
			for _, j := range []int{open, k} {
				n := &s.nodes[pods[j].node]
				if n.reason == "" {
					other := pods[open+k-j].node
					n.skip(ReasonDuplicatePodCIDR, "spec.podCIDR %s overlaps the pod CIDR of node %s", n.podCIDRs[0], s.nodes[other].name)
				}
			}
			pl.issues.conflict(ConflictCIDRClaimedTwice, s.name, "", "nodes with overlapping pod CIDRs; all left out",
				fmt.Sprintf("%s (node %s) and %s (node %s)", pods[open].p, s.nodes[pods[open].node].name, pods[k].p, s.nodes[pods[k].node].name))
		}
		if last := lastAddr(pods[k].p); open < 0 || last.Compare(openLast) > 0 {
			open, openLast = k, last
		}
	}
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

	ep, epSource, err := meshEndpoint(leader, s.entry.WireguardPort)
	if err != nil {
		e.fail(ReasonMalformedEndpoint, fmt.Sprintf("leader %s: %v", leader.name, err))
	}
	e.endpoint = ep
	e.keepalive = int(s.entry.PersistentKeepalive)
	if e.keepalive <= 0 {
		e.keepalive = leader.keepalive
	}
	if err == nil && ep.IsZero() && e.keepalive == 0 {
		e.fail(ReasonNoEndpointNoKeepalive, fmt.Sprintf("leader %s has no endpoint other clusters can dial and nothing asks them to accept a roaming one: set %s on the node, or persistentKeepalive for the cluster and %s on its nodes",
			leader.name, kilov1alpha1.AnnotationClusterMeshEndpoint, kilov1alpha1.AnnotationPersistentKeepalive))
	}
	if e.ready {
		natted := ep.IsZero() || s.entry.PersistentKeepalive > 0
		if natted && leader.keepalive == 0 {
			pl.issues.warning(WarningKeepaliveNotSent, s.name, "", fmt.Sprintf("leaders of a roaming or NATed cluster that send no keepalives: set %s on them, or the tunnel closes when idle", kilov1alpha1.AnnotationPersistentKeepalive), leader.name)
		}
		if ep.Addr.IsValid() && !ep.IsPublic() {
			pl.issues.warning(WarningPrivateEndpoint, s.name, "", "endpoints that are private addresses; other clusters reach them only over a private network", fmt.Sprintf("%s (leader %s, from %s)", ep, leader.name, epSource))
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
			if within(p, s.nets.pod) {
				e.claims = append(e.claims, claim{prefix: p, kind: claimPodExtra, node: int32(i)})
			}
		}
		if n.internalIP.IsValid() && within(hostPrefix(n.internalIP), s.nets.node) {
			e.claims = append(e.claims, claim{prefix: hostPrefix(n.internalIP), kind: claimInternalIP, node: int32(i)})
		}
	}
	if g.wireguardIP.IsValid() {
		e.claims = append(e.claims, claim{prefix: hostPrefix(g.wireguardIP), kind: claimWireGuardIP, node: -1})
	}
	return pool
}

// addLocationIPs gives every group the allowed-location-ips of its members,
// filtered as kg filters them (an entry overlapping another group's entries
// or any address kg routes in the cluster is dropped) and then by
// containment in the cluster's declared networks.
func (pl *planner) addLocationIPs(s *source) {
	type locIP struct {
		p        netip.Prefix
		group    int
		carriers []int
	}
	var locs []locIP
	for gi := range s.groups {
		first := len(locs)
		for _, i := range s.groups[gi].members {
			for _, p := range s.nodes[i].locationIPs {
				if k := slices.IndexFunc(locs[first:], func(l locIP) bool { return l.p == p }); k >= 0 {
					locs[first+k].carriers = append(locs[first+k].carriers, i)
				} else {
					locs = append(locs, locIP{p: p, group: gi, carriers: []int{i}})
				}
			}
		}
		// kg orders a group's location IPs by their string form.
		slices.SortFunc(locs[first:], func(a, b locIP) int { return strings.Compare(a.p.String(), b.p.String()) })
	}
	if len(locs) == 0 {
		return
	}
	var kiloRoutes []netip.Prefix
	for gi := range s.groups {
		g := &s.groups[gi]
		for _, i := range g.members {
			n := &s.nodes[i]
			kiloRoutes = append(kiloRoutes, n.podCIDRs[0])
			if n.internalIP.IsValid() {
				kiloRoutes = append(kiloRoutes, hostPrefix(n.internalIP))
			}
		}
		if g.wireguardIP.IsValid() {
			kiloRoutes = append(kiloRoutes, hostPrefix(g.wireguardIP))
		}
	}
	routes := newPrefixIndex(kiloRoutes, make([]int, len(kiloRoutes)))
	for k, l := range locs {
		why := ""
		if q, _, ok := routes.overlap(l.p); ok {
			why = fmt.Sprintf("overlaps %s, which kg already routes in the cluster; kg drops it", q)
		} else if j := slices.IndexFunc(locs, func(o locIP) bool { return o.group != l.group && o.p.Overlaps(l.p) }); j >= 0 {
			why = fmt.Sprintf("overlaps %s of group %s; kg drops both", locs[j].p, s.groups[locs[j].group].name)
		} else if !within(l.p, s.nets.all) {
			why = "lies outside every network the cluster declares"
		}
		if why == "" {
			e := &s.exports[l.group]
			e.claims = append(e.claims, claim{prefix: l.p, kind: claimLocationIP, node: -1})
			continue
		}
		for _, i := range l.carriers {
			s.nodes[i].note(NoteLocationIPDropped, "%s entry %s %s", kilov1alpha1.AnnotationAllowedLocationIPs, l.p, why)
		}
		pl.issues.warning(WarningLocationIPsDropped, s.name, "", "allowed-location-ips left out", fmt.Sprintf("%s of group %s: %s", locs[k].p, s.groups[l.group].name, why))
	}
}

// meshEndpoint is what other clusters dial for n, and where it came from:
// the first present of clustermesh-endpoint, force-endpoint, the first IPv4
// (else IPv6) ExternalIP with the cluster's WireGuard port, and kg's
// endpoint. A present but malformed value is an error, never skipped over.
// clustermesh-endpoint "-" says the node cannot be dialled from elsewhere
// (it sits behind NAT): its group becomes a roaming Peer that other clusters
// wait to hear from, which needs keepalives.
func meshEndpoint(n *nodeInfo, port int32) (Endpoint, string, error) {
	if n.node.Annotations[kilov1alpha1.AnnotationClusterMeshEndpoint] == "-" {
		return Endpoint{}, kilov1alpha1.AnnotationClusterMeshEndpoint, nil
	}
	for _, key := range []string{kilov1alpha1.AnnotationClusterMeshEndpoint, kilov1alpha1.AnnotationForceEndpoint} {
		if v := n.node.Annotations[key]; v != "" {
			e, err := ParseEndpoint(v)
			if err != nil {
				return Endpoint{}, key, fmt.Errorf("%s: %w", key, err)
			}
			return e, key, nil
		}
	}
	if port <= 0 || port > 65535 {
		port = meshv1alpha1.DefaultWireguardPort
	}
	var v4, v6 netip.Addr
	var bad []string
	for _, a := range n.node.Status.Addresses {
		if a.Type != corev1.NodeExternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		switch {
		case err != nil || ip.Zone() != "" || ip.Unmap().IsUnspecified():
			bad = append(bad, a.Address)
		case ip.Unmap().Is4() && !v4.IsValid():
			v4 = ip.Unmap()
		case !ip.Unmap().Is4() && !v6.IsValid():
			v6 = ip
		}
	}
	switch {
	case v4.IsValid():
		return Endpoint{Addr: v4, Port: uint16(port)}, "ExternalIP", nil
	case v6.IsValid():
		return Endpoint{Addr: v6, Port: uint16(port)}, "ExternalIP", nil
	case len(bad) > 0:
		return Endpoint{}, "ExternalIP", fmt.Errorf("status.addresses ExternalIP %q is not a usable IP", bad[0])
	}
	if v := n.node.Annotations[kilov1alpha1.AnnotationEndpoint]; v != "" {
		e, err := ParseEndpoint(v)
		if err != nil {
			return Endpoint{}, kilov1alpha1.AnnotationEndpoint, fmt.Errorf("%s: %w", kilov1alpha1.AnnotationEndpoint, err)
		}
		return e, kilov1alpha1.AnnotationEndpoint, nil
	}
	return Endpoint{}, "", nil
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

// clusterView renders the source-side view of a reachable cluster.
func (pl *planner) clusterView(s *source) meshv1alpha1.ClusterPlan {
	v := meshv1alpha1.ClusterPlan{
		Name:              s.name,
		Reachable:         true,
		Granularity:       s.gran.value,
		GranularitySource: s.gran.source,
	}
	if s.extrasHolder >= 0 {
		v.ExtraNetworksGroup = s.groups[s.extrasHolder].name
	}
	groupOf := make([]int32, len(s.nodes))
	for i := range groupOf {
		groupOf[i] = -1
	}
	v.Groups = make([]meshv1alpha1.GroupPlan, len(s.groups))
	names := make([]string, 0, len(s.nodes)) // one backing array for all member lists
	wireguardIPs := pl.batch(len(s.groups), len("255.255.255.255"))
	for gi := range s.groups {
		g, e := &s.groups[gi], &s.exports[gi]
		from := len(names)
		for _, i := range g.members {
			names = append(names, s.nodes[i].name)
			groupOf[i] = int32(gi)
		}
		gp := &v.Groups[gi] // zero: filled in place
		gp.Name, gp.Leader, gp.Members, gp.Ready = g.name, s.nodes[g.leader].name, names[from:len(names):len(names)], e.ready
		if g.wireguardIP.IsValid() {
			wireguardIPs.buf = g.wireguardIP.AppendTo(wireguardIPs.buf)
		}
		wireguardIPs.end()
		if e.ready {
			gp.PeerName = e.name
			gp.Endpoint = e.hostPort
			gp.PersistentKeepalive = int32(e.keepalive)
			v.Summary.ReadyGroups++
		} else {
			gp.Reason, gp.Message = e.reason, e.message
		}
	}
	ips := wireguardIPs.text()
	for gi := range v.Groups {
		v.Groups[gi].WireguardIP = wireguardIPs.at(ips, gi) // "" when there is none
	}

	skipped := map[string]int32{}
	messages := pl.batch(len(s.nodes), len("advertised through location:, led by ")+40)
	messageOf := make([]int, len(s.nodes))
	v.Nodes = make([]meshv1alpha1.NodeDecision, len(s.nodes))
	for i := range s.nodes {
		n := &s.nodes[i]
		d := &v.Nodes[i] // zero: filled in place
		d.Node, d.Notes = n.name, n.notes
		var g *group
		var e *export
		if gi := groupOf[i]; gi >= 0 {
			g, e = &s.groups[gi], &s.exports[gi]
			d.Group = g.name
			d.Role = meshv1alpha1.NodeRoleMember
			if g.leader == i {
				d.Role = meshv1alpha1.NodeRoleLeader
			}
			v.Summary.KiloReadyNodes++
		}
		switch {
		case n.reason != "":
			d.Reason, d.Message = n.reason, n.message
			if d.Role == meshv1alpha1.NodeRoleLeader && e.ready {
				d.Message += fmt.Sprintf("; it still leads %s in Kilo, so that group's Peer uses its key and endpoint", g.name)
			}
		case !e.ready:
			d.Reason, d.Message = e.reason, fmt.Sprintf("group %s is not exported: %s", g.name, e.message)
		default:
			d.Included, d.Reason = true, ReasonAdvertised
			if d.Role == meshv1alpha1.NodeRoleLeader {
				messageOf[i] = messages.add("leads ", g.name, ", exported as Peer ", e.name)
			} else {
				messageOf[i] = messages.add("advertised through ", g.name, ", led by ", s.nodes[g.leader].name)
			}
			v.Summary.AdvertisedNodes++
		}
		if !d.Included {
			skipped[d.Reason]++
		}
	}
	texts := messages.text()
	for i := range v.Nodes {
		if v.Nodes[i].Included {
			v.Nodes[i].Message = messages.at(texts, messageOf[i])
		}
	}
	v.Summary.Nodes = int32(len(s.nodes))
	v.Summary.Groups = int32(len(s.groups))
	for _, r := range sortedKeys(skipped) {
		v.Summary.SkippedByReason = append(v.Summary.SkippedByReason, meshv1alpha1.ReasonCount{Reason: r, Count: skipped[r]})
	}
	return v
}

func joinPrefixes(ps []netip.Prefix) string {
	if len(ps) == 0 {
		return "none declared"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
