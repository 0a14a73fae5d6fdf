package main

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// What kg decides from its cluster's Nodes and Kilo Peers, for one node,
// reduced to what carries packets: whether the node leads its group, its
// WireGuard peers and its routes. It elects nothing and allocates nothing:
// a group's leader is the Ready member carrying a kilo.squat.ai/wireguard-ip
// annotation, which the test writes as Kilo's agents would (kg writes it
// only on leaders); the leader annotation itself is for the planner.

// Kilo's own facts, held here and not taken from this repository's API, so
// that the agent disagrees with the server where the server misreads Kilo:
// kg's granularities (its --mesh-granularity, which it writes into
// kilo.squat.ai/granularity) are these lower-case words, compared as they
// are, and its default --topology-label is Kubernetes' region label.
const (
	kgGranularityLocation = "location" // kg's default
	kgGranularityFull     = "full"
	kgGranularityCross    = "cross" // a widely deployed patch of kg
	kgTopologyLabel       = corev1.LabelTopologyRegion
)

// kiloNode is a Node as kg reads it.
type kiloNode struct {
	name  string
	group string
	ready bool
	key   string // base64, as in the annotation
	// endpoint is force-endpoint if it parses, else endpoint. Only IP:port
	// is understood: the test bed has no DNS.
	endpoint    netip.AddrPort
	internalIP  netip.Addr // invalid: none
	podCIDR     netip.Prefix
	wireguardIP netip.Prefix // leaders only
	keepalive   int
	granularity string
}

// wgPeer is one peer of the node's WireGuard device.
type wgPeer struct {
	PublicKey    string         `json:"publicKey"`
	Endpoint     netip.AddrPort `json:"endpoint"`
	Keepalive    int            `json:"persistentKeepalive,omitempty"`
	PresharedKey string         `json:"-"`
	AllowedIPs   []netip.Prefix `json:"allowedIPs"`
}

// route sends Dst into the WireGuard device, or with Via set to Via on the
// underlay.
type route struct {
	Dst netip.Prefix `json:"dst"`
	Via netip.Addr   `json:"via"`
}

// config is everything the node's data plane must hold.
type config struct {
	Group    string `json:"group"`
	Leader   string `json:"leader"` // the group's leader, "" if none
	IsLeader bool   `json:"isLeader"`
	// Address is the node's WireGuard IP while it leads.
	Address netip.Prefix `json:"address"`
	Peers   []wgPeer     `json:"peers"`
	Routes  []route      `json:"routes"`
	// Notes say what was ignored and why.
	Notes []string `json:"notes,omitempty"`
}

func (c *config) note(format string, args ...any) {
	c.Notes = append(c.Notes, fmt.Sprintf(format, args...))
}

// readNode reads node as kg does.
func readNode(n *corev1.Node, now time.Time) kiloNode {
	ann := n.Annotations
	k := kiloNode{name: n.Name, key: ann[kilov1alpha1.AnnotationKey], granularity: ann[kilov1alpha1.AnnotationGranularity]}
	if k.granularity == "" {
		k.granularity = kgGranularityLocation
	}
	for _, a := range []string{ann[kilov1alpha1.AnnotationForceEndpoint], ann[kilov1alpha1.AnnotationEndpoint]} {
		if ap, err := netip.ParseAddrPort(a); err == nil {
			k.endpoint = ap
			break
		}
	}
	internal, forced := ann[kilov1alpha1.AnnotationForceInternalIP]
	if !forced {
		internal = ann[kilov1alpha1.AnnotationInternalIP]
	}
	if p, err := netip.ParsePrefix(internal); err == nil {
		k.internalIP = p.Addr()
	}
	if p, err := netip.ParsePrefix(n.Spec.PodCIDR); err == nil {
		k.podCIDR = p.Masked()
	}
	if p, err := netip.ParsePrefix(ann[kilov1alpha1.AnnotationWireGuardIP]); err == nil {
		k.wireguardIP = p
	}
	k.keepalive, _ = strconv.Atoi(ann[kilov1alpha1.AnnotationPersistentKeepalive])
	// Kilo's readiness: a recent check-in, a key, an endpoint, a pod CIDR.
	k.ready = kilov1alpha1.CheckedIn(n, now) && k.key != "" && k.endpoint.IsValid() && k.podCIDR.IsValid()

	switch k.granularity {
	case kgGranularityFull, kgGranularityCross:
		k.group = "node:" + n.Name
	case kgGranularityLocation:
		if !k.internalIP.IsValid() {
			// Without an internal IP a node cannot reach its location's
			// leader: Kilo makes it a group of its own.
			k.group = "node:" + n.Name
			break
		}
		loc, ok := ann[kilov1alpha1.AnnotationLocation]
		if !ok {
			loc = n.Labels[kgTopologyLabel]
		}
		k.group = "location:" + loc
	default:
		// kg refuses to start with a granularity it does not know, so no
		// kg would ever have written this one: the node takes part in
		// nothing.
		k.ready = false
	}
	return k
}

// group is a set of Ready nodes behind one leader.
type group struct {
	name    string
	members []kiloNode // sorted by name
	leader  *kiloNode
}

// allowedIPs are what reaches the group through its leader, in Kilo's
// order: each member's pod CIDR and internal IP, then the leader's
// WireGuard IP.
func (g *group) allowedIPs() []netip.Prefix {
	var out []netip.Prefix
	for _, m := range g.members {
		out = append(out, m.podCIDR)
		if m.internalIP.IsValid() {
			out = append(out, netip.PrefixFrom(m.internalIP, m.internalIP.BitLen()))
		}
	}
	if g.leader != nil && g.leader.wireguardIP.IsValid() {
		a := g.leader.wireguardIP.Addr()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out
}

// compute returns the configuration of node self from its cluster's Nodes
// and Kilo Peers at now.
func compute(self string, nodes []*corev1.Node, peers []*kilov1alpha1.Peer, now time.Time) (config, error) {
	var cfg config
	var me *kiloNode
	groups := map[string]*group{}
	for _, n := range nodes {
		k := readNode(n, now)
		if n.Name == self {
			me = &k
		}
		if !k.ready {
			continue
		}
		g := groups[k.group]
		if g == nil {
			g = &group{name: k.group}
			groups[k.group] = g
		}
		g.members = append(g.members, k)
	}
	if me == nil {
		return cfg, fmt.Errorf("node %s not found", self)
	}
	if !me.ready {
		// kg keeps its own node checked in; one that is not Ready takes
		// part in nothing.
		return cfg, fmt.Errorf("node %s is not Ready in Kilo's terms (key, endpoint, pod CIDR, last-seen)", self)
	}
	names := make([]string, 0, len(groups))
	for name, g := range groups {
		names = append(names, name)
		slices.SortFunc(g.members, func(a, b kiloNode) int { return cmp.Compare(a.name, b.name) })
		for i := range g.members {
			if !g.members[i].wireguardIP.IsValid() {
				continue
			}
			if g.leader != nil {
				cfg.note("group %s: both %s and %s carry a WireGuard IP; no leader until one is removed", name, g.leader.name, g.members[i].name)
				g.leader = nil
				break
			}
			g.leader = &g.members[i]
		}
	}
	slices.Sort(names)
	mine := groups[me.group]
	cfg.Group = mine.name
	if mine.leader != nil {
		cfg.Leader = mine.leader.name
		cfg.IsLeader = mine.leader.name == self
	}

	// Within the group the CNI, not WireGuard, carries pods: each member's
	// pod CIDR through its internal IP.
	for _, m := range mine.members {
		if m.name != self && m.internalIP.IsValid() && m.internalIP.Is4() == m.podCIDR.Addr().Is4() {
			cfg.Routes = append(cfg.Routes, route{Dst: m.podCIDR, Via: m.internalIP})
		}
	}
	if mine.leader == nil {
		cfg.note("group %s has no leader (no member carries %s): nothing beyond the group is reachable", mine.name, kilov1alpha1.AnnotationWireGuardIP)
		return cfg, nil
	}

	// Everything beyond the group: the other groups of the cluster, then
	// the Kilo Peers.
	var remote []wgPeer
	for _, name := range names {
		g := groups[name]
		if g == mine {
			continue
		}
		if g.leader == nil {
			cfg.note("group %s has no leader: not reachable", name)
			continue
		}
		remote = append(remote, wgPeer{
			PublicKey:  g.leader.key,
			Endpoint:   g.leader.endpoint,
			Keepalive:  me.keepalive,
			AllowedIPs: g.allowedIPs(),
		})
	}
	remote = append(remote, peersFromCRs(&cfg, me, peers)...)

	if !cfg.IsLeader {
		// Members send all of it to their leader over the underlay. An
		// IPv6 range cannot take an IPv4 next hop: with IPv4 internal IPs,
		// IPv6 pods are only reachable on leaders (Kilo's limit too).
		via := mine.leader.internalIP
		for _, p := range remote {
			for _, dst := range p.AllowedIPs {
				if dst.Addr().Is4() == via.Is4() {
					cfg.Routes = append(cfg.Routes, route{Dst: dst, Via: via})
				}
			}
		}
		sortRoutes(cfg.Routes)
		return cfg, nil
	}
	cfg.Address = me.wireguardIP
	cfg.Peers = remote
	for _, p := range remote {
		for _, dst := range p.AllowedIPs {
			cfg.Routes = append(cfg.Routes, route{Dst: dst})
		}
	}
	sortRoutes(cfg.Routes)
	return cfg, nil
}

// peersFromCRs turns Kilo Peers into WireGuard peers as kg does: invalid
// ones are ignored, a CIDR claimed by an earlier Peer (by name) is dropped
// from later ones, and Peers with the same public key collapse into the
// last one.
func peersFromCRs(cfg *config, me *kiloNode, crs []*kilov1alpha1.Peer) []wgPeer {
	crs = slices.Clone(crs)
	slices.SortFunc(crs, func(a, b *kilov1alpha1.Peer) int { return cmp.Compare(a.Name, b.Name) })
	claimed := map[netip.Prefix]string{}
	var out []wgPeer
	byKey := map[string]int{}
	for _, cr := range crs {
		if errs := cr.Validate(); len(errs) > 0 {
			cfg.note("Peer %s ignored: %v", cr.Name, errs.ToAggregate())
			continue
		}
		if cr.Spec.PublicKey == me.key {
			cfg.note("Peer %s ignored: it carries this node's own key", cr.Name)
			continue
		}
		p := wgPeer{PublicKey: cr.Spec.PublicKey, Keepalive: me.keepalive, PresharedKey: cr.Spec.PresharedKey}
		if e := cr.Spec.Endpoint; e != nil {
			addr, err := netip.ParseAddr(e.DNSOrIP.IP)
			if e.DNSOrIP.DNS != "" || err != nil {
				cfg.note("Peer %s: endpoint %+v is not an IP; treated as roaming (the bed has no DNS)", cr.Name, e.DNSOrIP)
			} else {
				p.Endpoint = netip.AddrPortFrom(addr, uint16(e.Port))
			}
		}
		for _, s := range cr.Spec.AllowedIPs {
			pfx, _ := netip.ParsePrefix(s) // valid: checked above
			pfx = pfx.Masked()
			if owner, dup := claimed[pfx]; dup {
				cfg.note("Peer %s: %s dropped, already claimed by Peer %s", cr.Name, pfx, owner)
				continue
			}
			claimed[pfx] = cr.Name
			p.AllowedIPs = append(p.AllowedIPs, pfx)
		}
		if i, dup := byKey[p.PublicKey]; dup {
			cfg.note("Peer %s replaces an earlier Peer with the same public key", cr.Name)
			out[i] = p
			continue
		}
		byKey[p.PublicKey] = len(out)
		out = append(out, p)
	}
	return out
}

func sortRoutes(rs []route) {
	slices.SortFunc(rs, func(a, b route) int {
		if c := a.Dst.Addr().Compare(b.Dst.Addr()); c != 0 {
			return c
		}
		return cmp.Compare(a.Dst.Bits(), b.Dst.Bits())
	})
}

// hexKey converts a base64 WireGuard key to the hex form of the UAPI.
func hexKey(b64 string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 32 {
		return "", fmt.Errorf("not a base64 WireGuard key")
	}
	return fmt.Sprintf("%x", raw), nil
}
