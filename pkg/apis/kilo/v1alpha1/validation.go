package v1alpha1

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wireGuardKeyLen is the length of a Curve25519 key.
const wireGuardKeyLen = 32

// Validate applies Kilo's own rules for a Peer. kg silently ignores a Peer
// that breaks any of them, so nothing may be written that fails here.
func (p *Peer) Validate() field.ErrorList {
	return ValidatePeerSpec(&p.Spec, specPath)
}

// specPath is the root of a Peer's field paths. Paths are immutable, so
// one is shared.
var specPath = field.NewPath("spec")

// ValidatePeerSpec applies Kilo's rules to a PeerSpec. A valid spec costs
// no allocation: the planner validates every Peer it builds, tens of
// thousands per plan, so paths are only built for errors.
func ValidatePeerSpec(s *PeerSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, cidr := range s.AllowedIPs {
		if !isCIDR(cidr) {
			errs = append(errs, field.Invalid(path.Child("allowedIPs").Index(i), cidr, "must be a CIDR (a bare IP needs /32 or /128)"))
		}
	}
	if err := ValidatePublicKey(s.PublicKey); err != nil {
		errs = append(errs, field.Invalid(path.Child("publicKey"), s.PublicKey, err.Error()))
	}
	if s.PersistentKeepalive < 0 {
		errs = append(errs, field.Invalid(path.Child("persistentKeepalive"), s.PersistentKeepalive, "must be >= 0"))
	}
	if s.Endpoint != nil {
		errs = append(errs, validateEndpoint(s.Endpoint, path)...)
	}
	return errs
}

// isCIDR is net.ParseCIDR's verdict, which is kg's rule. What
// netip.ParsePrefix accepts, net.ParseCIDR accepts too (one slash, the same
// address parser, no zone, a length in range, without the leading zeros
// net.ParseCIDR would also take), and netip allocates nothing, so it
// answers first; net.ParseCIDR decides the rest.
func isCIDR(s string) bool {
	if _, err := netip.ParsePrefix(s); err == nil {
		return true
	}
	_, _, err := net.ParseCIDR(s)
	return err == nil
}

// isIP is net.ParseIP's verdict; netip answers first for the same reason.
func isIP(s string) bool {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return true
	}
	return net.ParseIP(s) != nil
}

// ValidatePublicKey reports whether key is the standard base64 of a 32-byte WireGuard key.
func ValidatePublicKey(key string) error {
	n, err := decodedLen(key)
	if err != nil {
		return fmt.Errorf("must be standard base64: %w", err)
	}
	if n != wireGuardKeyLen {
		return fmt.Errorf("must decode to %d bytes, not %d", wireGuardKeyLen, n)
	}
	return nil
}

// decodedLen is the length of base64.StdEncoding.DecodeString(key), and its
// error; a key of up to 48 characters is decoded on the stack.
func decodedLen(key string) (int, error) {
	if len(key) > 48 {
		b, err := base64.StdEncoding.DecodeString(key)
		return len(b), err
	}
	var src [48]byte
	var dst [36]byte // base64.StdEncoding.DecodedLen(48)
	n := copy(src[:], key)
	return base64.StdEncoding.Decode(dst[:], src[:n])
}

// validateEndpoint checks spec.endpoint; spec is the path of the spec.
func validateEndpoint(e *PeerEndpoint, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	path := func(names ...string) *field.Path { return spec.Child("endpoint", names...) }
	if e.Port < 1 || e.Port > 65535 {
		errs = append(errs, field.Invalid(path("port"), e.Port, "must be between 1 and 65535"))
	}
	switch {
	case e.DNSOrIP.DNS == "" && e.DNSOrIP.IP == "":
		errs = append(errs, field.Required(path("dnsOrIP"), "one of dns or ip must be set"))
	case e.DNSOrIP.DNS != "":
		for _, msg := range validation.IsDNS1123Subdomain(e.DNSOrIP.DNS) {
			errs = append(errs, field.Invalid(path("dnsOrIP", "dns"), e.DNSOrIP.DNS, msg))
		}
	}
	if e.DNSOrIP.IP != "" && !isIP(e.DNSOrIP.IP) {
		errs = append(errs, field.Invalid(path("dnsOrIP", "ip"), e.DNSOrIP.IP, "must be a valid IP address"))
	}
	return errs
}
