package planner

// findLeader is kg's leader election over a group's members, sorted by name:
// the first with the leader annotation and a public endpoint IP; else the
// first with the annotation; else the first with a public endpoint IP; else
// the first. Every kg computes the same, so the planner must too: only the
// leader runs WireGuard, and remote Peers must point at it.
func findLeader(nodes []nodeInfo, members []int) int {
	hinted, public := -1, -1
	for _, i := range members {
		n := &nodes[i]
		isPublic := n.kiloEndpoint.IsPublic()
		if n.leaderHint {
			if isPublic {
				return i
			}
			if hinted < 0 {
				hinted = i
			}
		}
		if isPublic && public < 0 {
			public = i
		}
	}
	switch {
	case hinted >= 0:
		return hinted
	case public >= 0:
		return public
	}
	return members[0]
}
