package planner

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
)

// checkDeclaredOverlaps reports declared networks of two clusters that
// overlap. Both clusters may be right about their own addresses, so nothing
// is dropped here; the pairs found tell the target checks where to look.
func (pl *planner) checkDeclaredOverlaps() {
	pl.overlap = make([][]bool, len(pl.sources))
	for i := range pl.overlap {
		pl.overlap[i] = make([]bool, len(pl.sources))
	}
	pl.overlapsOthers = make([]bool, len(pl.sources))
	for a := range pl.sources {
		for b := a + 1; b < len(pl.sources); b++ {
			sa, sb := pl.sources[a], pl.sources[b]
			for _, da := range pl.declared[a] {
				for _, db := range pl.declared[b] {
					if !da.prefix.Overlaps(db.prefix) {
						continue
					}
					pl.overlap[a][b], pl.overlap[b][a] = true, true
					pl.overlapsOthers[a], pl.overlapsOthers[b] = true, true
					pl.issues.conflict(ConflictNetworkOverlap, sa.name, "",
						"networks declared for two clusters overlap; addresses inside the overlap are left out of the Peers where they would collide",
						fmt.Sprintf("%s %s overlaps %s of cluster %s", da.field, da.prefix, db.field+" "+db.prefix.String(), sb.name))
				}
			}
		}
	}
}

// claimRef points at one claim of one owner: an export, or (export -1) the
// extra networks of a source.
type claimRef struct {
	prefix netip.Prefix
	src    int32
	export int32
	pos    int32
}

func (pl *planner) claimAt(r *claimRef) *claim {
	s := pl.sources[r.src]
	if r.export < 0 {
		return &s.extras[r.pos]
	}
	return &s.exports[r.export].claims[r.pos]
}

// claimKey is what the sweep sorts when a claim does not fit a v4Key: the
// address as integers and the index of its claimRef. Refs are made in owner
// order, so the index breaks ties by owner.
type claimKey struct {
	hi, lo uint64
	v6     bool
	bits   uint8
	ref    int32
}

func compareClaimKeys(a, b claimKey) int {
	switch {
	case a.v6 != b.v6:
		if a.v6 {
			return 1
		}
		return -1
	case a.hi != b.hi:
		return cmp.Compare(a.hi, b.hi)
	case a.lo != b.lo:
		return cmp.Compare(a.lo, b.lo)
	case a.bits != b.bits:
		return cmp.Compare(a.bits, b.bits)
	}
	return cmp.Compare(a.ref, b.ref)
}

// An IPv4 claim sorts as one integer: the address, the prefix length and
// the index of its claimRef, from the highest bits down. That orders
// exactly as compareClaimKeys does, and a slice of integers sorts several
// times faster than one of structs with a comparison function.
const (
	v4KeyRefBits = 26 // room for 67 million claims
	v4KeyRefMask = 1<<v4KeyRefBits - 1
)

// sweepOrder returns the indexes of refs ordered for the sweep: by address,
// IPv4 first, then prefix length, then index.
func sweepOrder(refs []claimRef) []int32 {
	var v4 []uint64
	var v6 []claimKey // and IPv4 too, in the unlikely case of too many refs
	packed := len(refs) <= v4KeyRefMask+1
	if packed {
		v4 = make([]uint64, 0, len(refs))
	}
	for i := range refs {
		a := refs[i].prefix.Addr()
		if packed && a.Is4() {
			b := a.As4()
			v4 = append(v4, uint64(binary.BigEndian.Uint32(b[:]))<<32|uint64(refs[i].prefix.Bits())<<v4KeyRefBits|uint64(i))
			continue
		}
		b := a.As16()
		v6 = append(v6, claimKey{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:]), v6: a.Is6(), bits: uint8(refs[i].prefix.Bits()), ref: int32(i)})
	}
	slices.Sort(v4)
	slices.SortFunc(v6, compareClaimKeys)
	order := make([]int32, 0, len(refs))
	for _, k := range v4 {
		order = append(order, int32(k&v4KeyRefMask))
	}
	for _, k := range v6 {
		order = append(order, k.ref)
	}
	return order
}

// sweepClaims enforces that one address belongs to one Peer: every address
// that overlaps an address of another group (or of another cluster's extra
// networks) is dropped from both, since kg would otherwise keep whichever
// Peer sorts first. Within one group, an exact repeat is merged silently.
// A sort and a sweep with a stack of enclosing prefixes: O(n log n).
func (pl *planner) sweepClaims() {
	n := 0
	for _, s := range pl.sources {
		for ei := range s.exports {
			n += len(s.exports[ei].claims)
		}
		n += len(s.extras)
	}
	refs := make([]claimRef, 0, n)
	for si, s := range pl.sources {
		for ei := range s.exports {
			if !s.exports[ei].ready {
				continue
			}
			for ci, c := range s.exports[ei].claims {
				refs = append(refs, claimRef{c.prefix, int32(si), int32(ei), int32(ci)})
			}
		}
		for ci, c := range s.extras {
			refs = append(refs, claimRef{c.prefix, int32(si), -1, int32(ci)})
		}
	}
	var stack []int32
	for _, k := range sweepOrder(refs) {
		c := &refs[k]
		for len(stack) > 0 && !refs[stack[len(stack)-1]].prefix.Contains(c.prefix.Addr()) {
			stack = stack[:len(stack)-1]
		}
		// Every prefix left on the stack contains c.
		for _, j := range stack {
			o := &refs[j]
			if o.src == c.src && o.export == c.export {
				if o.prefix == c.prefix {
					pl.claimAt(c).dropped = true
				}
				continue
			}
			pl.dropPair(o, c)
		}
		stack = append(stack, k)
	}
}

// dropPair drops two colliding claims and records the conflict. A node
// whose pod CIDR is dropped is no longer advertised at all.
func (pl *planner) dropPair(a, b *claimRef) {
	ca, cb := pl.claimAt(a), pl.claimAt(b)
	ca.dropped, cb.dropped = true, true
	da, db := pl.describeRef(a), pl.describeRef(b)
	for _, x := range []struct {
		r     *claimRef
		c     *claim
		other string
	}{{a, ca, db}, {b, cb, da}} {
		if x.c.kind == claimPod {
			n := &pl.sources[x.r.src].nodes[x.c.node]
			if n.reason == "" {
				n.skip(ReasonCIDRClaimedTwice, "spec.podCIDR %s collides with %s", x.c.prefix, x.other)
			}
		}
	}
	reason := ConflictCIDRClaimedTwice
	if ca.kind == claimWireGuardIP && cb.kind == claimWireGuardIP {
		reason = ConflictDuplicateWireGuardIP
	}
	first, second := da, db
	cluster := pl.sources[min(a.src, b.src)].name
	if b.src < a.src {
		first, second = db, da
	}
	pl.issues.conflict(reason, cluster, "", "addresses claimed by two groups; left out of every Peer", first+" and "+second)
}

func (pl *planner) describeRef(r *claimRef) string {
	s := pl.sources[r.src]
	if r.export < 0 {
		return pl.describe(s, nil, s.extras[r.pos])
	}
	e := &s.exports[r.export]
	return pl.describe(s, e, e.claims[r.pos])
}
