package memberaccess

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// ServerPolicy decides where the API servers of a namespace's member
// clusters may be: kubeconfigs are the tenants', and without a policy a
// tenant could make this server connect to anything it can reach (the
// cloud's metadata service, the node's kubelet, services inside the
// cluster). The policy is applied to the address actually dialled, after
// name resolution, so DNS rebinding gains nothing; and again by admission
// before a mesh is stored, so a refused mesh makes no connection at all.
type ServerPolicy interface {
	// AllowedServers returns the networks the API servers of the member
	// clusters of meshes in namespace may have addresses in. Empty means
	// public addresses only. Loopback, link-local, unspecified and cloud
	// metadata addresses are refused whatever the list holds, unless a
	// network inside those ranges is listed on purpose (see CheckServerAddress).
	AllowedServers(namespace string) []netip.Prefix
}

// PolicySynced reports whether a policy can answer yet: one that also has
// a HasSynced method (its answers come from informers, such as grants)
// says so itself; others always can. Until then no kubeconfig is judged,
// so that nothing is refused on half the facts.
func PolicySynced(p ServerPolicy) bool {
	if s, ok := p.(interface{ HasSynced() bool }); ok {
		return s.HasSynced()
	}
	return true
}

// ServerPolicyFunc adapts a function to ServerPolicy.
type ServerPolicyFunc func(namespace string) []netip.Prefix

// AllowedServers implements ServerPolicy.
func (f ServerPolicyFunc) AllowedServers(namespace string) []netip.Prefix { return f(namespace) }

// StaticServerPolicy allows the same networks in every namespace: the
// server's --member-server-cidrs.
func StaticServerPolicy(allowed []netip.Prefix) ServerPolicy {
	allowed = slices.Clone(allowed)
	return ServerPolicyFunc(func(string) []netip.Prefix { return allowed })
}

// nonPublic are the special-purpose ranges of IANA's registries besides the
// guarded ones (validation.GuardedAddress): private, shared (carrier-grade NAT), documentation,
// benchmarking, multicast and reserved addresses. With no networks listed,
// only addresses outside all of them are allowed.
var nonPublic = mustPrefixes(
	"10.0.0.0/8", "100.64.0.0/10", "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24",
	"192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	"64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20",
	"5f00::/16", "fc00::/7", "fec0::/10", "ff00::/8",
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// CheckServerAddress reports why a member API server may not be dialled at
// addr under the allowed networks (empty: public addresses only), or nil.
// The error is an *Error with Reason ErrServerNotAllowed.
func CheckServerAddress(addr netip.Addr, allowed []netip.Prefix) error {
	addr = addr.Unmap().WithZone("")
	if what, guarded, refused := validation.GuardedAddress(addr, allowed); refused {
		return newError(ErrServerNotAllowed, "", fmt.Sprintf("%s is %s; member API servers there are refused unless a network inside %s is allowed explicitly", addr, what, guarded))
	}
	if len(allowed) == 0 {
		for _, p := range nonPublic {
			if p.Contains(addr) {
				return newError(ErrServerNotAllowed, "", fmt.Sprintf("%s is not a public address, and no network is allowed for member API servers besides public addresses", addr))
			}
		}
		return nil
	}
	for _, p := range allowed {
		if p.Contains(addr) {
			return nil
		}
	}
	return newError(ErrServerNotAllowed, "", fmt.Sprintf("%s is outside the networks allowed for member API servers (%s)", addr, validation.JoinPrefixes(allowed)))
}
