package validation

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Network is one CIDR declared by a mesh, with where it was declared.
type Network struct {
	Prefix netip.Prefix
	Path   *field.Path
}

// ParseCIDR parses a CIDR and insists on its canonical form, so that one
// network has one spelling everywhere (labels, Peers, overlap messages).
func ParseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("must be a CIDR such as 10.42.0.0/16 or fd00:42::/56")
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("must be an IPv4 or IPv6 CIDR, not an IPv4-mapped IPv6 one")
	}
	if canonical := p.Masked().String(); canonical != s {
		return netip.Prefix{}, fmt.Errorf("must be in canonical form %s", canonical)
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, fmt.Errorf("must not be a default route: it would capture all traffic")
	}
	return p, nil
}

// ClusterNetworks parses every network a cluster declares; p is the path of the entry.
func ClusterNetworks(c *meshv1alpha1.ClusterEntry, p *field.Path) ([]Network, field.ErrorList) {
	var (
		nets []Network
		errs field.ErrorList
	)
	add := func(path *field.Path, s string) {
		prefix, err := ParseCIDR(s)
		if err != nil {
			errs = append(errs, field.Invalid(path, s, err.Error()))
			return
		}
		nets = append(nets, Network{Prefix: prefix, Path: path})
	}
	for i, s := range c.PodCIDRs {
		add(p.Child("podCIDRs").Index(i), s)
	}
	if c.WireguardCIDR != "" {
		add(p.Child("wireguardCIDR"), c.WireguardCIDR)
	}
	if c.ServiceCIDR != "" {
		add(p.Child("serviceCIDR"), c.ServiceCIDR)
	}
	for i, s := range c.AdditionalCIDRs {
		add(p.Child("additionalCIDRs").Index(i), s)
	}
	for i, s := range c.NodeCIDRs {
		add(p.Child("nodeCIDRs").Index(i), s)
	}
	return nets, errs
}

// validateNoOverlap reports every network that overlaps one declared before
// it, inside one cluster or across clusters, naming the first of those.
func validateNoOverlap(nets []Network) field.ErrorList {
	prefixes := make([]netip.Prefix, len(nets))
	key := make([]int, len(nets))
	for i, n := range nets {
		prefixes[i], key[i] = n.Prefix, i
	}
	var errs field.ErrorList
	for i, j := range minOverlapping(prefixes, key) {
		if j < i {
			errs = append(errs, field.Invalid(nets[i].Path, nets[i].Prefix.String(),
				fmt.Sprintf("overlaps %s (%s)", nets[j].Path, nets[j].Prefix)))
		}
	}
	return errs
}

// Within reports whether p lies entirely inside one of nets. It is the
// containment rule both admission (networks the server allows) and the
// planner (addresses a cluster declares) apply.
func Within(p netip.Prefix, nets []netip.Prefix) bool {
	for _, n := range nets {
		if n.Bits() <= p.Bits() && n.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// JoinPrefixes lists networks for a message: "10.0.0.0/8, fd00::/8".
func JoinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
