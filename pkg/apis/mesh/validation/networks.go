package validation

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// network is one CIDR declared by the mesh, with where it was declared.
type network struct {
	prefix netip.Prefix
	path   *field.Path
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

// clusterNetworks parses every network a cluster declares.
func clusterNetworks(c *meshv1alpha1.ClusterEntry, p *field.Path) ([]network, field.ErrorList) {
	var (
		nets []network
		errs field.ErrorList
	)
	add := func(path *field.Path, s string) {
		prefix, err := ParseCIDR(s)
		if err != nil {
			errs = append(errs, field.Invalid(path, s, err.Error()))
			return
		}
		nets = append(nets, network{prefix: prefix, path: path})
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
// it, inside one cluster or across clusters. A mesh holds tens of networks,
// so comparing every pair is cheaper than anything cleverer.
func validateNoOverlap(nets []network) field.ErrorList {
	var errs field.ErrorList
	for i := range nets {
		for j := 0; j < i; j++ {
			if nets[i].prefix.Overlaps(nets[j].prefix) {
				errs = append(errs, field.Invalid(nets[i].path, nets[i].prefix.String(),
					fmt.Sprintf("overlaps %s (%s)", nets[j].path, nets[j].prefix)))
				break
			}
		}
	}
	return errs
}
