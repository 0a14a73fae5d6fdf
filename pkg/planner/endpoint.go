package planner

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Endpoint is a WireGuard endpoint: exactly one of Addr and DNS is set.
type Endpoint struct {
	// Addr is the IP, unmapped (an IPv4-mapped IPv6 address becomes IPv4) and without zone.
	Addr netip.Addr
	// DNS is an RFC 1123 subdomain.
	DNS  string
	Port uint16
}

// IsZero reports whether e is the absent endpoint.
func (e Endpoint) IsZero() bool { return !e.Addr.IsValid() && e.DNS == "" }

// String is host:port, with IPv6 in brackets, as wg-quick and Kilo write it.
func (e Endpoint) String() string {
	return string(e.appendTo(nil))
}

// appendTo appends String's result to b, as net.JoinHostPort writes it: a
// host holding a colon (any IPv6 address) goes in brackets.
func (e Endpoint) appendTo(b []byte) []byte {
	switch {
	case e.IsZero():
		return b
	case e.DNS != "" && strings.IndexByte(e.DNS, ':') < 0:
		b = append(b, e.DNS...)
	case e.DNS != "":
		b = append(append(append(b, '['), e.DNS...), ']')
	case e.Addr.Is4(): // the only addresses written without a colon
		b = e.Addr.AppendTo(b)
	default:
		b = append(e.Addr.AppendTo(append(b, '[')), ']')
	}
	return strconv.AppendUint(append(b, ':'), uint64(e.Port), 10)
}

// peerEndpoint fills pe with e in the Peer API's shape, the DNS name in dns,
// the IP in ip, never both (kg prefers dns when both are set), and returns
// it; nil when e is zero. hostPort is e.String(): the IP is taken from it.
func (e Endpoint) peerEndpoint(pe *kilov1alpha1.PeerEndpoint, hostPort string) *kilov1alpha1.PeerEndpoint {
	if e.IsZero() {
		return nil
	}
	*pe = kilov1alpha1.PeerEndpoint{Port: int32(e.Port)}
	if e.DNS != "" {
		pe.DNSOrIP.DNS = e.DNS
	} else {
		host := hostPort[:strings.LastIndexByte(hostPort, ':')]
		pe.DNSOrIP.IP = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	return pe
}

// IsPublic applies Kilo's own test, which leader election depends on: not in
// 10/8, 172.16/12 or 192.168/16, and for IPv6 not in fd00::/16 (Kilo compares
// two bytes, so fd12:: counts as public). 100.64/10 is public to Kilo. A DNS
// endpoint is never public.
func (e Endpoint) IsPublic() bool {
	if !e.Addr.IsValid() {
		return false
	}
	if e.Addr.Is4() {
		b := e.Addr.As4()
		switch {
		case b[0] == 10, b[0] == 172 && b[1]&0xf0 == 0x10, b[0] == 192 && b[1] == 168:
			return false
		}
		return true
	}
	b := e.Addr.As16()
	return !(b[0] == 0xfd && b[1] == 0x00)
}

var errEmptyEndpoint = errors.New("empty endpoint")

// ParseEndpoint parses what other clusters are to dial: host:port as Kilo
// parses it (IPv6 in brackets, a DNS name allowed, port 1-65535), minus what
// cannot be dialled from elsewhere or put in a Peer (an IPv6 zone, the
// unspecified address).
func ParseEndpoint(s string) (Endpoint, error) {
	e, err := parseKiloEndpoint(s)
	if err != nil {
		return Endpoint{}, err
	}
	if e.Addr.Zone() != "" {
		return Endpoint{}, fmt.Errorf("endpoint %s: an IPv6 zone cannot be dialled from another cluster", memberText(s))
	}
	if e.Addr.IsUnspecified() {
		return Endpoint{}, fmt.Errorf("endpoint %s: the unspecified address cannot be dialled", memberText(s))
	}
	return e, nil
}

// parseKiloEndpoint accepts exactly what kg's wireguard.ParseEndpoint accepts,
// so that readiness and leader election match kg's.
func parseKiloEndpoint(s string) (Endpoint, error) {
	if s == "" {
		return Endpoint{}, errEmptyEndpoint
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		// The error quotes the input raw: only its kind is kept.
		why := "not host:port"
		if ae, ok := err.(*net.AddrError); ok {
			why = ae.Err
		}
		return Endpoint{}, fmt.Errorf("endpoint %s: %s", memberText(s), why)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return Endpoint{}, fmt.Errorf("endpoint %s: port must be a number from 1 to 65535", memberText(s))
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return Endpoint{Addr: addr.Unmap(), Port: uint16(port)}, nil
	}
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return Endpoint{}, fmt.Errorf("endpoint %s: host is neither an IP nor a DNS name: %s", memberText(s), errs[0])
	}
	return Endpoint{DNS: host, Port: uint16(port)}, nil
}

// meshEndpoint is what other clusters dial for n, and where it came from:
// the first present of clustermesh-endpoint, force-endpoint, the first IPv4
// (else IPv6) ExternalIP with the cluster's WireGuard port, and kg's
// endpoint. A present but malformed value is an error, never skipped over.
// clustermesh-endpoint "-" says the node cannot be dialled from elsewhere
// (it sits behind NAT): its group becomes a roaming Peer that other clusters
// wait to hear from, which needs keepalives.
func meshEndpoint(n *nodeInfo, port int32) (Endpoint, string, error) {
	if n.node.Annotations[kilov1alpha1.AnnotationClusterMeshEndpoint] == "-" {
		return Endpoint{}, kilov1alpha1.AnnotationClusterMeshEndpoint, nil
	}
	for _, key := range []string{kilov1alpha1.AnnotationClusterMeshEndpoint, kilov1alpha1.AnnotationForceEndpoint} {
		if v := n.node.Annotations[key]; v != "" {
			e, err := ParseEndpoint(v)
			if err != nil {
				return Endpoint{}, key, fmt.Errorf("%s: %w", key, err)
			}
			return e, key, nil
		}
	}
	if port <= 0 || port > 65535 {
		port = meshv1alpha1.DefaultWireguardPort
	}
	var v4, v6 netip.Addr
	var bad []string
	for _, a := range n.node.Status.Addresses {
		if a.Type != corev1.NodeExternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		switch {
		case err != nil || ip.Zone() != "" || ip.Unmap().IsUnspecified():
			bad = append(bad, a.Address)
		case ip.Unmap().Is4() && !v4.IsValid():
			v4 = ip.Unmap()
		case !ip.Unmap().Is4() && !v6.IsValid():
			v6 = ip
		}
	}
	switch {
	case v4.IsValid():
		return Endpoint{Addr: v4, Port: uint16(port)}, "ExternalIP", nil
	case v6.IsValid():
		return Endpoint{Addr: v6, Port: uint16(port)}, "ExternalIP", nil
	case len(bad) > 0:
		return Endpoint{}, "ExternalIP", fmt.Errorf("status.addresses ExternalIP %s is not a usable IP", memberText(bad[0]))
	}
	if v := n.node.Annotations[kilov1alpha1.AnnotationEndpoint]; v != "" {
		e, err := ParseEndpoint(v)
		if err != nil {
			return Endpoint{}, kilov1alpha1.AnnotationEndpoint, fmt.Errorf("%s: %w", kilov1alpha1.AnnotationEndpoint, err)
		}
		return e, kilov1alpha1.AnnotationEndpoint, nil
	}
	return Endpoint{}, "", nil
}

// DefaultNATKeepalive is the keepalive, in seconds, of the Peers that
// represent a cluster behind NAT when neither its entry nor its leader
// names one: WireGuard's own advice for NAT, and what makes kg take the
// endpoint it learns from the handshakes.
const DefaultNATKeepalive = 25

// dialled is what other clusters dial for leader n of source s, where it
// came from, and the keepalive of its group's Peer: the entry's, else the
// leader's annotation. A cluster behind NAT cannot be dialled, whatever its
// nodes say: its Peers are roaming, with a keepalive.
func dialled(s *source, n *nodeInfo) (ep Endpoint, epSource string, keepalive int, err error) {
	keepalive = int(s.entry.PersistentKeepalive)
	if keepalive <= 0 {
		keepalive = n.keepalive
	}
	if s.entry.BehindNAT {
		if keepalive <= 0 {
			keepalive = DefaultNATKeepalive
		}
		return Endpoint{}, "behindNAT", keepalive, nil
	}
	ep, epSource, err = meshEndpoint(n, s.entry.WireguardPort)
	return ep, epSource, keepalive, err
}
