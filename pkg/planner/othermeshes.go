package planner

import "net/netip"

// Claims of other meshes. A member cluster shared by two meshes routes one
// address to one place only: when their networks collide there, the mesh
// that takes precedence (the earlier one, decided outside the planner)
// keeps them, and this mesh leaves them out of every Peer it puts on that
// cluster, reporting a network conflict that names nothing of the other
// mesh (it is another tenant's).

// otherMeshIndex returns the index of the claims that apply on target t to
// the Peers of source s, or nil when there are none. Indexes are built
// once per (target, source) and plan.
func (pl *planner) otherMeshIndex(t, s *source) *prefixIndex {
	claims := pl.in.OtherMeshClaims[t.name]
	if len(claims) == 0 {
		return nil
	}
	key := [2]int{t.idx, s.idx}
	if x, ok := pl.otherMeshIndexes[key]; ok {
		return x
	}
	var prefixes []netip.Prefix
	for _, c := range claims {
		if c.SameCluster != s.name {
			prefixes = append(prefixes, c.Prefix.Masked())
		}
	}
	var x *prefixIndex
	if len(prefixes) > 0 {
		x = newPrefixIndex(prefixes, make([]int, len(prefixes)))
	}
	if pl.otherMeshIndexes == nil {
		pl.otherMeshIndexes = map[[2]int]*prefixIndex{}
	}
	pl.otherMeshIndexes[key] = x
	return x
}

const otherMeshLead = "addresses another ClusterMesh that shares the target cluster claims there (it was created earlier); left out of this mesh's Peers"
