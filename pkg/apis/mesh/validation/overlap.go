package validation

import (
	"cmp"
	"math"
	"net/netip"
	"slices"
)

// Two CIDR prefixes overlap exactly when one contains the other: aligned
// blocks nest or are disjoint. Sorted by first address, then shorter prefix
// first, every prefix comes right after the prefixes that contain it and
// right before the prefixes it contains, so one sweep with a stack of the
// enclosing prefixes finds every overlap in O(n log n), however the
// prefixes nest or repeat. Comparing every pair instead cost seconds of CPU
// per request for a spec of 40,000 networks (docs/performance.md).

// noPartner is minOverlapping's answer for a prefix that overlaps nothing
// with a key.
const noPartner = math.MaxInt

// minOverlapping returns, for every prefix i, the smallest key[j] over the
// prefixes j != i that overlap it (noPartner when there is none). A key of
// noPartner takes a prefix out of the answers of the others, while its own
// answer is still computed.
func minOverlapping(prefixes []netip.Prefix, key []int) []int {
	order := make([]int, len(prefixes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		pa, pb := prefixes[a], prefixes[b]
		return cmp.Or(pa.Addr().Compare(pb.Addr()), cmp.Compare(pa.Bits(), pb.Bits()), cmp.Compare(a, b))
	})
	// frame is a prefix on the stack: the smallest key of the prefixes
	// below it (its ancestors, and equal prefixes sorted before it) and of
	// those it contains, seen so far.
	type frame struct {
		i          int
		ancestors  int
		descendant int
	}
	out := make([]int, len(prefixes))
	var stack []frame
	pop := func() {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out[f.i] = min(f.ancestors, f.descendant)
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			top.descendant = min(top.descendant, f.descendant, key[f.i])
		}
	}
	for _, i := range order {
		p := prefixes[i]
		for len(stack) > 0 && !prefixes[stack[len(stack)-1].i].Contains(p.Addr()) {
			pop()
		}
		f := frame{i: i, ancestors: noPartner, descendant: noPartner}
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			f.ancestors = min(top.ancestors, key[top.i])
		}
		stack = append(stack, f)
	}
	for len(stack) > 0 {
		pop()
	}
	return out
}

// OverlapsWith returns, for each of ours, the index of one of theirs that
// overlaps it (the first in theirs), or -1. It takes O(n log n) for n
// prefixes in all.
func OverlapsWith(ours, theirs []netip.Prefix) []int {
	all := make([]netip.Prefix, 0, len(ours)+len(theirs))
	all = append(append(all, ours...), theirs...)
	key := make([]int, len(all))
	for i := range ours {
		key[i] = noPartner
	}
	for j := range theirs {
		key[len(ours)+j] = j
	}
	found := minOverlapping(all, key)
	out := make([]int, len(ours))
	for i := range ours {
		out[i] = -1
		if found[i] != noPartner {
			out[i] = found[i]
		}
	}
	return out
}
