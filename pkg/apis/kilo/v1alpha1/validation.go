package v1alpha1

import (
	"encoding/base64"
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wireGuardKeyLen is the length of a Curve25519 key.
const wireGuardKeyLen = 32

// Validate applies Kilo's own rules for a Peer. kg silently ignores a Peer
// that breaks any of them, so nothing may be written that fails here.
func (p *Peer) Validate() field.ErrorList {
	return ValidatePeerSpec(&p.Spec, field.NewPath("spec"))
}

// ValidatePeerSpec applies Kilo's rules to a PeerSpec.
func ValidatePeerSpec(s *PeerSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, cidr := range s.AllowedIPs {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
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
		errs = append(errs, validateEndpoint(s.Endpoint, path.Child("endpoint"))...)
	}
	return errs
}

// ValidatePublicKey reports whether key is the standard base64 of a 32-byte WireGuard key.
func ValidatePublicKey(key string) error {
	b, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return fmt.Errorf("must be standard base64: %w", err)
	}
	if len(b) != wireGuardKeyLen {
		return fmt.Errorf("must decode to %d bytes, not %d", wireGuardKeyLen, len(b))
	}
	return nil
}

func validateEndpoint(e *PeerEndpoint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if e.Port < 1 || e.Port > 65535 {
		errs = append(errs, field.Invalid(path.Child("port"), e.Port, "must be between 1 and 65535"))
	}
	hp := path.Child("dnsOrIP")
	switch {
	case e.DNSOrIP.DNS == "" && e.DNSOrIP.IP == "":
		errs = append(errs, field.Required(hp, "one of dns or ip must be set"))
	case e.DNSOrIP.DNS != "":
		for _, msg := range validation.IsDNS1123Subdomain(e.DNSOrIP.DNS) {
			errs = append(errs, field.Invalid(hp.Child("dns"), e.DNSOrIP.DNS, msg))
		}
	}
	if e.DNSOrIP.IP != "" && net.ParseIP(e.DNSOrIP.IP) == nil {
		errs = append(errs, field.Invalid(hp.Child("ip"), e.DNSOrIP.IP, "must be a valid IP address"))
	}
	return errs
}
