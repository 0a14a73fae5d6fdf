package validation

import "net/netip"

// guardedRange is a range of addresses that neither a member API server nor
// a WireGuard endpoint has any business being in. An address in one is
// refused unless a listed network lies inside the range (listing
// 127.0.0.0/8 allows loopback; listing 0.0.0.0/0 does not). Metadata
// addresses are single addresses, so only listing the address itself
// allows them.
type guardedRange struct {
	prefix netip.Prefix
	what   string
}

// guardedRanges are checked in order: the metadata addresses before the
// link-local range that holds most of them.
var guardedRanges = []guardedRange{
	// Cloud instance metadata services: they hand out credentials.
	{netip.MustParsePrefix("169.254.169.254/32"), "the cloud metadata address"}, // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean
	{netip.MustParsePrefix("169.254.170.2/32"), "the cloud metadata address"},   // AWS ECS task credentials
	{netip.MustParsePrefix("169.254.169.123/32"), "the cloud metadata address"}, // AWS time sync
	{netip.MustParsePrefix("100.100.100.200/32"), "the cloud metadata address"}, // Alibaba Cloud
	{netip.MustParsePrefix("192.0.0.192/32"), "the cloud metadata address"},     // Oracle Cloud
	{netip.MustParsePrefix("fd00:ec2::254/128"), "the cloud metadata address"},  // AWS, IPv6
	{netip.MustParsePrefix("fd00:ec2::23/128"), "the cloud metadata address"},   // AWS DNS, IPv6
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address"},              // dialling 0.0.0.0 reaches this host
	{netip.MustParsePrefix("::/128"), "an unspecified address"},                 //
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},                //
	{netip.MustParsePrefix("::1/128"), "a loopback address"},                    //
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},           //
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},                //
}

// GuardedAddress says whether addr lies in a guarded range (cloud metadata,
// unspecified, loopback, link-local) that no network of allowed opens: it
// returns what the address is and the range, with refused true. This is
// the first rule of the server's address policy, for member API servers
// (--member-server-cidrs and the grants' memberServers) and for the
// endpoints of Peers on the local cluster alike.
func GuardedAddress(addr netip.Addr, allowed []netip.Prefix) (what string, guarded netip.Prefix, refused bool) {
	addr = addr.Unmap().WithZone("")
	for _, g := range guardedRanges {
		if !g.prefix.Contains(addr) {
			continue
		}
		for _, p := range allowed {
			if p.Contains(addr) && p.Bits() >= g.prefix.Bits() {
				return "", netip.Prefix{}, false
			}
		}
		return g.what, g.prefix, true
	}
	return "", netip.Prefix{}, false
}
