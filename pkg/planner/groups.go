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
	var groups []group
	byName := map[string]int{}
	groupOf := make([]int, len(nodes))
	ready := 0
	for i := range nodes {
		n := &nodes[i]
		if !n.kiloReady {
			groupOf[i] = -1
			continue
		}
		ready++
		name := groupName(n, g)
		gi, ok := byName[name]
		if !ok {
			gi = len(groups)
			byName[name] = gi
			groups = append(groups, group{name: name})
		}
		groupOf[i] = gi
		groups[gi].leader++ // counts members until the leader is known
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
