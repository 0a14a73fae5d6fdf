package planner

import (
	"net/netip"
	"slices"
	"strings"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Kilo's group ("segment") name prefixes. "location:" sorts before "node:",
// which decides the WireGuard IP numbering.
const (
	groupPrefixLocation = "location:"
	groupPrefixNode     = "node:"
)

// group is one Kilo segment of a cluster: Kilo-Ready nodes behind one leader.
type group struct {
	name string
	// members index the cluster's nodes, in name order.
	members []int
	// leader indexes the cluster's nodes.
	leader int
	// wireguardIP is what kg gives the leader's interface; !IsValid() when
	// the subnet is missing or exhausted.
	wireguardIP netip.Addr
}

// groupName is the segment kg puts a Ready node in.
func groupName(n *nodeInfo, g meshv1alpha1.Granularity) string {
	if g == meshv1alpha1.GranularityLocation && n.internalIP.IsValid() {
		return groupPrefixLocation + n.location
	}
	return groupPrefixNode + n.name
}

// formGroups groups the Kilo-Ready nodes (already sorted by name) as kg
// does and returns the groups sorted by name, each with its leader.
func formGroups(nodes []nodeInfo, g meshv1alpha1.Granularity) []group {
	ready := 0
	for i := range nodes {
		if nodes[i].kiloReady {
			ready++
		}
	}
	var groups []group
	if g != meshv1alpha1.GranularityLocation {
		groups = make([]group, 0, ready) // one per node
	}
	// A node's own group ("node:<name>") is unique, since node names are;
	// only location groups need looking up, by location. The names of the
	// nodes' own groups are built in one buffer.
	byLocation := map[string]int{}
	var nodeGroupNames batch
	var nodeGroups []int // the groups whose names are in nodeGroupNames
	groupOf := make([]int, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		if !n.kiloReady {
			groupOf[i] = -1
			continue
		}
		var gi int
		if g == meshv1alpha1.GranularityLocation && n.internalIP.IsValid() {
			var ok bool
			if gi, ok = byLocation[n.location]; !ok {
				gi = len(groups)
				byLocation[n.location] = gi
				groups = append(groups, group{name: groupName(n, g)})
			}
		} else {
			if nodeGroups == nil {
				nodeGroupNames.grow(ready, len(groupPrefixNode)+len(n.name))
				nodeGroups = make([]int, 0, ready)
			}
			gi = len(groups)
			groups = append(groups, group{})
			nodeGroupNames.add(groupPrefixNode, n.name)
			nodeGroups = append(nodeGroups, gi)
		}
		groupOf[i] = gi
		groups[gi].leader++ // counts members until the leader is known
	}
	for k, name := range nodeGroupNames.strings() {
		groups[nodeGroups[k]].name = name
	}
	// One backing array for all member lists: under full granularity there
	// are as many groups as nodes.
	backing := make([]int, 0, ready)
	for gi := range groups {
		groups[gi].members = backing[len(backing) : len(backing) : len(backing)+groups[gi].leader]
		backing = backing[:len(backing)+groups[gi].leader]
	}
	for i, gi := range groupOf {
		if gi >= 0 {
			groups[gi].members = append(groups[gi].members, i)
		}
	}
	slices.SortFunc(groups, func(a, b group) int { return strings.Compare(a.name, b.name) })
	for i := range groups {
		groups[i].leader = findLeader(nodes, groups[i].members)
	}
	return groups
}

// allocateWireGuardIPs hands out the addresses after the network address of
// subnet to the groups in name order, as kg's allocator does. Groups past
// the end of the subnet get none (kg itself then fails to build its
// topology); so do all groups when the subnet is not valid.
func allocateWireGuardIPs(groups []group, subnet netip.Prefix) {
	if !subnet.IsValid() {
		return
	}
	a := subnet.Masked().Addr()
	for i := range groups {
		a = a.Next()
		if !a.IsValid() || !subnet.Contains(a) {
			return
		}
		groups[i].wireguardIP = a
	}
}
