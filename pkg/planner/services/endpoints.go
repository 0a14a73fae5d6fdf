package services

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// maxEndpointsPerSlice is what the in-cluster endpointslice controller puts
// in one slice by default; the API allows 1000.
const maxEndpointsPerSlice = 100

// endpointGroup is the carried endpoints of one export that share an
// address type and a set of ports, so that one EndpointSlice can hold them.
type endpointGroup struct {
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	portsKey    string
	endpoints   []discoveryv1.Endpoint // sorted by address
}

// carriedEndpoints picks the endpoints of an exported Service's slices that
// may go to other clusters: ready, of an IP address type, and addressed
// inside the exporting cluster's declared podCIDRs. Only an endpoint's
// first address counts (consumers such as kube-proxy use only that one),
// and it is the only one carried. The rest are counted by reason.
func carriedEndpoints(podCIDRs []netip.Prefix, sources []*discoveryv1.EndpointSlice) (groups []*endpointGroup, leftOut map[string]int) {
	leftOut = map[string]int{}
	byKey := map[string]*endpointGroup{}
	seen := map[netip.Addr]bool{}
	// Sorted by name so that which of two duplicates is carried is stable.
	sources = slices.SortedFunc(slices.Values(sources), func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range sources {
		for _, ep := range s.Endpoints {
			addr, reason := carried(s.AddressType, podCIDRs, ep)
			if reason == "" && seen[addr] {
				reason = LeftOutDuplicateAddress
			}
			if reason != "" {
				leftOut[reason]++
				continue
			}
			seen[addr] = true
			ports := slicePorts(s.Ports)
			key := string(s.AddressType) + "|" + portsKey(ports)
			g := byKey[key]
			if g == nil {
				g = &endpointGroup{addressType: s.AddressType, ports: ports, portsKey: key}
				byKey[key] = g
				groups = append(groups, g)
			}
			g.endpoints = append(g.endpoints, carriedEndpoint(addr, ep))
		}
	}
	for _, g := range groups {
		slices.SortFunc(g.endpoints, func(a, b discoveryv1.Endpoint) int { return strings.Compare(a.Addresses[0], b.Addresses[0]) })
	}
	slices.SortFunc(groups, func(a, b *endpointGroup) int { return strings.Compare(a.portsKey, b.portsKey) })
	return groups, leftOut
}

// carried returns the endpoint's address, or the reason it is left out;
// containment is checked before readiness, so an address that must never
// be written says so whatever its state.
func carried(t discoveryv1.AddressType, podCIDRs []netip.Prefix, ep discoveryv1.Endpoint) (netip.Addr, string) {
	if t != discoveryv1.AddressTypeIPv4 && t != discoveryv1.AddressTypeIPv6 {
		return netip.Addr{}, LeftOutUnsupportedAddressType
	}
	if len(ep.Addresses) == 0 {
		return netip.Addr{}, LeftOutInvalidAddress
	}
	addr, err := netip.ParseAddr(ep.Addresses[0])
	if err != nil || addr.Zone() != "" || addr.Is4() != (t == discoveryv1.AddressTypeIPv4) || addr.Is4In6() {
		return netip.Addr{}, LeftOutInvalidAddress
	}
	if !slices.ContainsFunc(podCIDRs, func(p netip.Prefix) bool { return p.Contains(addr) }) {
		return netip.Addr{}, LeftOutOutsidePodCIDRs
	}
	if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
		return netip.Addr{}, LeftOutNotReady
	}
	return addr, ""
}

// carriedEndpoint is what another cluster is told of an endpoint: its
// address, readiness, hostname (headless DNS names it) and zone. Node
// names and target references name objects of the exporting cluster, so
// they stay there.
func carriedEndpoint(addr netip.Addr, ep discoveryv1.Endpoint) discoveryv1.Endpoint {
	ready, serving, terminating := true, true, false
	out := discoveryv1.Endpoint{
		Addresses:  []string{addr.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
	}
	if ep.Hostname != nil {
		h := *ep.Hostname
		out.Hostname = &h
	}
	if ep.Zone != nil {
		z := *ep.Zone
		out.Zone = &z
	}
	return out
}

func slicePorts(in []discoveryv1.EndpointPort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(in))
	for _, p := range in {
		out = append(out, *p.DeepCopy())
	}
	slices.SortFunc(out, func(a, b discoveryv1.EndpointPort) int { return cmp.Compare(deref(a.Name), deref(b.Name)) })
	return out
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%s/%d/%s;", deref(p.Name), deref(p.Protocol), deref(p.Port), deref(p.AppProtocol))
	}
	return b.String()
}

// deref is the value p points at, or the zero value.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
