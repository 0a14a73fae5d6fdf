package planner

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
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
	nodes := snap.Nodes.Slice()

	topologyLabel := topologyLabelOf(s.entry)
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
		if why := nodeNameProblem(node.Name); why != "" {
			// Kubernetes stores no such name: it would reach Peers'
			// annotations and terminals as the member wrote it.
			s.nodes[i] = nodeInfo{name: memberText(node.Name), node: node}
			s.nodes[i].skip(ReasonInvalidNodeName, "the name is not a DNS subdomain (%s); the node is left out", why)
			pl.issues.warning(WarningInvalidNodes, s.name, "", invalidNodesLead, s.nodes[i].name)
			continue
		}
		if why, ok := node.Annotations[meshv1alpha1.AnnotationNodeTooLarge]; ok {
			// The member caches kept only its name: the Node is heavier
			// than they keep of one.
			s.nodes[i] = nodeInfo{name: node.Name, node: node}
			s.nodes[i].skip(ReasonNodeTooLarge, "%s; the node is left out", why)
			pl.issues.warning(WarningNodesTooLarge, s.name, "", "nodes larger than the server keeps of one Node; left out", node.Name)
			continue
		}
		podCIDRs = parseNode(&s.nodes[i], node, topologyLabel, pl.in.Now, podCIDRs)
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

// topologyLabelOf is the node label that names a location when no
// location annotation does.
func topologyLabelOf(e *meshv1alpha1.ClusterEntry) string {
	if e.TopologyLabel == "" {
		return meshv1alpha1.DefaultTopologyLabel
	}
	return e.TopologyLabel
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
			switch {
			case len(s.nets.pod) == 0:
				n.skip(ReasonPodCIDROutsideDeclared, "spec.podCIDR %s lies outside the cluster's declared podCIDRs (none declared)", n.podCIDRs[0])
			case !validation.Within(n.podCIDRs[0], s.nets.pod):
				n.skip(ReasonPodCIDROutsideDeclared, "spec.podCIDR %s lies outside the cluster's declared podCIDRs (%s)", n.podCIDRs[0], validation.JoinPrefixes(s.nets.pod))
			default:
				pods = append(pods, podRef{n.podCIDRs[0], i})
			}
			for _, p := range n.podCIDRs[1:] {
				if !validation.Within(p, s.nets.pod) {
					n.note(NotePodCIDRNotAdvertised, "spec.podCIDRs entry %s lies outside the declared podCIDRs; not advertised", p)
					pl.issues.warning(WarningPodCIDRsNotAdvertised, s.name, "", "pod CIDRs outside the declared podCIDRs, not advertised (declare the other IP family to carry them)", fmt.Sprintf("%s of node %s", p, n.name))
				}
			}
			if n.internalIP.IsValid() && !validation.Within(hostPrefix(n.internalIP), s.nets.node) {
				if len(s.nets.node) == 0 {
					n.note(NoteInternalIPNotAdvertised, "internal IP %s is not advertised: the cluster declares no nodeCIDRs", n.internalIP)
				} else {
					n.note(NoteInternalIPNotAdvertised, "internal IP %s lies outside the declared nodeCIDRs (%s); not advertised", n.internalIP, validation.JoinPrefixes(s.nets.node))
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
		} else if !validation.Within(l.p, s.nets.all) {
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
