package join

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// defaultServiceCIDR is the name of the ServiceCIDR kube-apiserver creates
// from its --service-cluster-ip-range.
const defaultServiceCIDR = "kubernetes"

// Proposal is a value join proposes for a field of the mesh entry, and
// where it came from: users see both before anything is written.
type Proposal struct {
	Values []string
	Source string
	// proposed marks an optional value join made up itself, which it may
	// leave out when the server refuses it.
	proposed bool
}

// String shows the values, or that there are none.
func (p Proposal) String() string {
	if len(p.Values) == 0 {
		return "-"
	}
	return strings.Join(p.Values, ", ")
}

// Networks are the proposed networks of a member cluster.
type Networks struct {
	PodCIDRs        Proposal
	ServiceCIDR     Proposal
	AdditionalCIDRs Proposal
	WireguardCIDR   Proposal
	NodeCIDRs       Proposal
}

// ProposePodCIDRs proposes, per address family, the smallest prefix that
// covers every node's spec.podCIDRs. The cluster's real --cluster-cidr may be
// wider (nodes added later get CIDRs outside a narrow cover): the source
// says so, and --pod-cidrs overrides.
func ProposePodCIDRs(nodes []corev1.Node) (Proposal, error) {
	var v4, v6 []netip.Prefix
	counted := 0
	for i := range nodes {
		cidrs := nodes[i].Spec.PodCIDRs
		if len(cidrs) == 0 && nodes[i].Spec.PodCIDR != "" {
			cidrs = []string{nodes[i].Spec.PodCIDR}
		}
		if len(cidrs) > 0 {
			counted++
		}
		for _, s := range cidrs {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return Proposal{}, fmt.Errorf("node %s: spec.podCIDRs entry %q is not a CIDR", nodes[i].Name, s)
			}
			if p.Addr().Is4() {
				v4 = append(v4, p.Masked())
			} else {
				v6 = append(v6, p.Masked())
			}
		}
	}
	if counted == 0 {
		return Proposal{}, fmt.Errorf("no node of the cluster has spec.podCIDRs: pass --pod-cidrs")
	}
	var values []string
	for _, family := range [][]netip.Prefix{v4, v6} {
		if c, ok := CoveringPrefix(family); ok {
			values = append(values, c.String())
		}
	}
	return Proposal{
		Values: values,
		Source: fmt.Sprintf("covering prefix of the spec.podCIDRs of %d node(s); pass --pod-cidrs if the cluster's --cluster-cidr is wider", counted),
	}, nil
}

// ProposeNodeCIDRs proposes, per address family, the smallest prefix that
// covers every node's InternalIP: without nodeCIDRs no internal IP is
// advertised. Like the pod CIDRs' cover it may be narrower than the host
// network (nodes added later): the source says so, and --node-cidrs
// overrides. No node with an InternalIP proposes nothing.
func ProposeNodeCIDRs(nodes []corev1.Node) Proposal {
	var v4, v6 []netip.Prefix
	counted := 0
	for i := range nodes {
		found := false
		for _, a := range nodes[i].Status.Addresses {
			ip, err := netip.ParseAddr(a.Address)
			if a.Type != corev1.NodeInternalIP || err != nil {
				continue
			}
			found = true
			if ip.Unmap().Is4() {
				v4 = append(v4, netip.PrefixFrom(ip.Unmap(), 32))
			} else {
				v6 = append(v6, netip.PrefixFrom(ip, 128))
			}
		}
		if found {
			counted++
		}
	}
	if counted == 0 {
		return Proposal{Source: "no node has an InternalIP; internal IPs are not advertised (pass --node-cidrs to advertise them)"}
	}
	var values, tooWide []string
	for _, family := range [][]netip.Prefix{v4, v6} {
		c, ok := CoveringPrefix(family)
		switch {
		case !ok:
		case c.Bits() < c.Addr().BitLen()/4:
			// Nodes in unrelated networks: their cover is no host network.
			tooWide = append(tooWide, c.String())
		default:
			values = append(values, c.String())
		}
	}
	source := fmt.Sprintf("covering prefix of the InternalIPs of %d node(s); pass --node-cidrs if the host network is wider", counted)
	if len(tooWide) > 0 {
		source += fmt.Sprintf(" (%s left out: too wide to be a host network)", strings.Join(tooWide, ", "))
	}
	return Proposal{Values: values, Source: source, proposed: len(values) > 0}
}

// WithoutOverlaps drops a proposal whose networks overlap those of the
// mesh's other entries: the mesh would refuse it, and a host network
// shared with another cluster (two VPCs alike) cannot be advertised anyway.
func WithoutOverlaps(p Proposal, others []netip.Prefix) Proposal {
	var ours []netip.Prefix
	for _, v := range p.Values {
		if q, err := netip.ParsePrefix(v); err == nil {
			ours = append(ours, q)
		}
	}
	for i, hit := range validation.OverlapsWith(ours, others) {
		if hit >= 0 {
			return Proposal{Source: fmt.Sprintf("the nodes' InternalIPs (%s) overlap a network of another member; internal IPs are not advertised", ours[i])}
		}
	}
	return p
}

// CoveringPrefix is the longest prefix that contains every prefix given,
// all of one address family; false for none.
func CoveringPrefix(prefixes []netip.Prefix) (netip.Prefix, bool) {
	if len(prefixes) == 0 {
		return netip.Prefix{}, false
	}
	first := prefixes[0]
	bits := first.Bits()
	for _, p := range prefixes[1:] {
		bits = min(bits, p.Bits(), commonBits(first.Addr(), p.Addr()))
	}
	return netip.PrefixFrom(first.Addr(), bits).Masked(), true
}

// commonBits counts the leading bits a and b (one family) share.
func commonBits(a, b netip.Addr) int {
	x, y := a.AsSlice(), b.AsSlice()
	n := 0
	for i := range x {
		d := x[i] ^ y[i]
		if d == 0 {
			n += 8
			continue
		}
		for d&0x80 == 0 {
			n++
			d <<= 1
		}
		break
	}
	return n
}

// ProposeServiceCIDRs proposes the service network from the cluster's
// ServiceCIDR objects: the first CIDR of the default one ("kubernetes",
// made from kube-apiserver's --service-cluster-ip-range) as serviceCIDR,
// every other CIDR (the default's second family, further ServiceCIDRs) as
// additionalCIDRs. served is false where the cluster has no ServiceCIDR API.
func ProposeServiceCIDRs(list []networkingv1.ServiceCIDR, served bool) (service, additional Proposal) {
	if !served {
		return Proposal{Source: "the cluster serves no networking.k8s.io/v1 ServiceCIDR objects; pass --service-cidr"}, Proposal{}
	}
	items := slices.Clone(list)
	// The default first, then by name: the proposal must not depend on
	// list order.
	slices.SortFunc(items, func(a, b networkingv1.ServiceCIDR) int {
		if (a.Name == defaultServiceCIDR) != (b.Name == defaultServiceCIDR) {
			if a.Name == defaultServiceCIDR {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	var all []string
	var names []string
	for _, s := range items {
		if s.DeletionTimestamp != nil {
			continue
		}
		names = append(names, s.Name)
		for _, c := range s.Spec.CIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				all = append(all, p.Masked().String())
			}
		}
	}
	if len(all) == 0 {
		return Proposal{Source: "the cluster has no ServiceCIDR objects; pass --service-cidr"}, Proposal{}
	}
	source := fmt.Sprintf("ServiceCIDR %s", strings.Join(names, ", "))
	service = Proposal{Values: all[:1], Source: source}
	if len(all) > 1 {
		additional = Proposal{Values: all[1:], Source: source + " (further service networks)"}
	}
	return service, additional
}

// ProposeWireguardCIDR proposes the cluster's Kilo --subnet from the
// kilo.squat.ai/wireguard-ip annotations kg writes on leaders: each is a host
// address with the mask of the subnet, e.g. 10.4.0.1/16.
func ProposeWireguardCIDR(nodes []corev1.Node) (Proposal, error) {
	subnets := map[netip.Prefix][]string{}
	var hostOnly []string
	for i := range nodes {
		v := nodes[i].Annotations[kilov1alpha1.AnnotationWireGuardIP]
		if v == "" {
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			continue // the planner reports malformed annotations
		}
		if p.Bits() == p.Addr().BitLen() {
			hostOnly = append(hostOnly, nodes[i].Name)
			continue
		}
		subnets[p.Masked()] = append(subnets[p.Masked()], nodes[i].Name)
	}
	switch len(subnets) {
	case 0:
		if len(hostOnly) > 0 {
			return Proposal{}, fmt.Errorf("the %s annotations of %s carry no subnet mask: pass --wireguard-cidr (Kilo's --subnet, 10.4.0.0/16 by default)",
				kilov1alpha1.AnnotationWireGuardIP, strings.Join(hostOnly, ", "))
		}
		return Proposal{}, fmt.Errorf("no node has a %s annotation (is Kilo running there?): pass --wireguard-cidr (Kilo's --subnet, 10.4.0.0/16 by default)",
			kilov1alpha1.AnnotationWireGuardIP)
	case 1:
		for p, names := range subnets {
			return Proposal{Values: []string{p.String()}, Source: fmt.Sprintf("%s of %d leader(s)", kilov1alpha1.AnnotationWireGuardIP, len(names))}, nil
		}
	}
	var seen []string
	for p, names := range subnets {
		seen = append(seen, fmt.Sprintf("%s (%s)", p, strings.Join(names, ", ")))
	}
	slices.Sort(seen)
	return Proposal{}, fmt.Errorf("the nodes' %s annotations disagree on the subnet: %s; pass --wireguard-cidr",
		kilov1alpha1.AnnotationWireGuardIP, strings.Join(seen, "; "))
}
