package planner

import (
	"encoding/binary"
	"math/rand"
	"net/netip"
	"slices"
	"testing"
)

// sweepOrder packs IPv4 claims into integers; the order must be the one
// compareClaimKeys gives every claim.
func TestSweepOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var refs []claimRef
	for range 5000 {
		var p netip.Prefix
		switch r.Intn(4) {
		case 0, 1: // IPv4, often the same address with other lengths
			p = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(r.Intn(4)), byte(r.Intn(4)), byte(r.Intn(256))}), r.Intn(33))
		case 2:
			var b [16]byte
			b[0], b[1], b[15] = 0xfd, byte(r.Intn(4)), byte(r.Intn(256))
			p = netip.PrefixFrom(netip.AddrFrom16(b), r.Intn(129))
		case 3: // IPv4-mapped IPv6 sorts as IPv6
			p = netip.PrefixFrom(netip.AddrFrom16(netip.AddrFrom4([4]byte{10, 0, 0, byte(r.Intn(256))}).As16()), 96+r.Intn(33))
		}
		refs = append(refs, claimRef{prefix: p})
	}
	keys := make([]claimKey, len(refs))
	for i := range refs {
		a := refs[i].prefix.Addr()
		b := a.As16()
		keys[i] = claimKey{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:]), v6: a.Is6(), bits: uint8(refs[i].prefix.Bits()), ref: int32(i)}
	}
	slices.SortFunc(keys, compareClaimKeys)
	want := make([]int32, len(keys))
	for i, k := range keys {
		want[i] = k.ref
	}
	if got := sweepOrder(refs); !slices.Equal(got, want) {
		t.Errorf("sweepOrder differs from compareClaimKeys's order")
	}
}
