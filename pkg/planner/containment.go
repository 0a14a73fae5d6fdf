package planner

import (
	"fmt"
	"net/netip"
	"slices"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// networks are the networks a cluster's ClusterEntry declares. Containment
// is the security boundary: an address is advertised for a cluster only if
// it lies inside one of them, and never if it overlaps one of the target's.
type networks struct {
	pod        []netip.Prefix
	wireguard  netip.Prefix // !IsValid() when missing or malformed
	service    netip.Prefix // !IsValid() when not declared
	additional []netip.Prefix
	node       []netip.Prefix
	// all is every declared network above, sorted and deduplicated.
	all []netip.Prefix
}

// declaredNetwork is one parsed network of the spec, named for messages.
type declaredNetwork struct {
	field  string
	prefix netip.Prefix
}

// parseNetworks parses the declared networks of e. Malformed entries are
// returned as problems and left out, which can only narrow what is advertised.
func parseNetworks(e *meshv1alpha1.ClusterEntry) (networks, []declaredNetwork, []string) {
	var n networks
	var named []declaredNetwork
	var problems []string
	parse := func(field, s string) (netip.Prefix, bool) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %q is not a CIDR", field, s))
			return netip.Prefix{}, false
		}
		p = canonical(p)
		named = append(named, declaredNetwork{field: field, prefix: p})
		return p, true
	}
	for i, s := range e.PodCIDRs {
		if p, ok := parse(fmt.Sprintf("podCIDRs[%d]", i), s); ok {
			n.pod = append(n.pod, p)
		}
	}
	if e.WireguardCIDR != "" {
		if p, ok := parse("wireguardCIDR", e.WireguardCIDR); ok {
			n.wireguard = p
		}
	} else {
		problems = append(problems, "wireguardCIDR is not set")
	}
	if e.ServiceCIDR != "" {
		if p, ok := parse("serviceCIDR", e.ServiceCIDR); ok {
			n.service = p
		}
	}
	for i, s := range e.AdditionalCIDRs {
		if p, ok := parse(fmt.Sprintf("additionalCIDRs[%d]", i), s); ok {
			n.additional = append(n.additional, p)
		}
	}
	for i, s := range e.NodeCIDRs {
		if p, ok := parse(fmt.Sprintf("nodeCIDRs[%d]", i), s); ok {
			n.node = append(n.node, p)
		}
	}
	for _, d := range named {
		n.all = append(n.all, d.prefix)
	}
	slices.SortFunc(n.all, comparePrefix)
	n.all = slices.Compact(n.all)
	return n, named, problems
}

// extras are the networks attached to one Peer of the cluster: known to the
// cluster, unknown to kg.
func (n *networks) extras() []netip.Prefix {
	var out []netip.Prefix
	if n.service.IsValid() {
		out = append(out, n.service)
	}
	return append(out, n.additional...)
}

// canonical masks p and unmaps an IPv4-mapped address, so equal networks
// compare equal whatever their spelling.
func canonical(p netip.Prefix) netip.Prefix {
	a := p.Addr()
	bits := p.Bits()
	if a.Is4In6() {
		a = a.Unmap()
		bits = max(bits-96, 0)
	}
	return netip.PrefixFrom(a, bits).Masked()
}

// hostPrefix is the /32 or /128 route to one address.
func hostPrefix(a netip.Addr) netip.Prefix {
	return netip.PrefixFrom(a, a.BitLen())
}

// overlapsAny returns the first of nets that overlaps p.
func overlapsAny(p netip.Prefix, nets []netip.Prefix) (netip.Prefix, bool) {
	for _, n := range nets {
		if n.Overlaps(p) {
			return n, true
		}
	}
	return netip.Prefix{}, false
}

// comparePrefix orders by address (IPv4 first), then shorter prefix first,
// so a network sorts right before the networks it contains.
func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	if a.Is4() {
		b := a.As4()
		for i := p.Bits(); i < 32; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		return netip.AddrFrom4(b)
	}
	b := a.As16()
	for i := p.Bits(); i < 128; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom16(b)
}

// prefixIndex answers "which of these prefixes overlaps p" in O(log n),
// whatever the prefixes' nesting: sorted by first address, with the running
// maximum of last addresses.
type prefixIndex struct {
	prefixes []netip.Prefix
	owners   []int
	maxLast  []netip.Addr
	argmax   []int
}

// newPrefixIndex indexes prefixes; owners[i] is returned for prefixes[i].
func newPrefixIndex(prefixes []netip.Prefix, owners []int) *prefixIndex {
	order := make([]int, len(prefixes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return comparePrefix(prefixes[a], prefixes[b]) })
	x := &prefixIndex{
		prefixes: make([]netip.Prefix, len(order)),
		owners:   make([]int, len(order)),
		maxLast:  make([]netip.Addr, len(order)),
		argmax:   make([]int, len(order)),
	}
	for i, o := range order {
		x.prefixes[i] = prefixes[o]
		x.owners[i] = owners[o]
		last := lastAddr(prefixes[o])
		if i == 0 || last.Compare(x.maxLast[i-1]) > 0 {
			x.maxLast[i], x.argmax[i] = last, i
		} else {
			x.maxLast[i], x.argmax[i] = x.maxLast[i-1], x.argmax[i-1]
		}
	}
	return x
}

// overlap returns a prefix overlapping p and its owner.
func (x *prefixIndex) overlap(p netip.Prefix) (netip.Prefix, int, bool) {
	if x == nil || len(x.prefixes) == 0 {
		return netip.Prefix{}, 0, false
	}
	first, last := p.Masked().Addr(), lastAddr(p)
	// n = number of indexed prefixes starting at or before p's last address.
	n, _ := slices.BinarySearchFunc(x.prefixes, last, func(q netip.Prefix, t netip.Addr) int {
		if q.Addr().Compare(t) <= 0 {
			return -1
		}
		return 1
	})
	if n == 0 || x.maxLast[n-1].Compare(first) < 0 {
		return netip.Prefix{}, 0, false
	}
	i := x.argmax[n-1]
	return x.prefixes[i], x.owners[i], true
}

// frozenOwner describes who holds an address the plan may not take on a target.
type frozenOwner struct {
	kept bool
	name string
}

// frozen indexes the addresses of the kept Peers and of the Peers this mesh
// does not manage: the plan may not claim any of them on this target. Only
// Peers kg accepts count; kg ignores the others.
func (pl *planner) frozen(kept, foreign []*kilov1alpha1.Peer) (*prefixIndex, []frozenOwner) {
	var prefixes []netip.Prefix
	var ownerOf []int
	var owners []frozenOwner
	add := func(p *kilov1alpha1.Peer, isKept bool) {
		if len(p.Validate()) > 0 {
			return
		}
		o := len(owners)
		owners = append(owners, frozenOwner{kept: isKept, name: p.Name})
		for _, s := range p.Spec.AllowedIPs {
			if q, err := netip.ParsePrefix(s); err == nil {
				prefixes = append(prefixes, canonical(q))
				ownerOf = append(ownerOf, o)
			}
		}
	}
	for _, k := range kept {
		add(k, true)
	}
	for _, f := range foreign {
		add(f, false)
	}
	if len(prefixes) == 0 {
		return nil, nil
	}
	return newPrefixIndex(prefixes, ownerOf), owners
}
