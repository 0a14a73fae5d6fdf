package v1alpha1

import (
	"encoding/base64"
	"net"
	"strings"
	"testing"
)

const testKey = "Xq3tQ4mS5kT8s0n2QGm1gVZ0cW6lXyJcE7m5x1f2bGY="

func validSpec() PeerSpec {
	return PeerSpec{
		AllowedIPs: []string{"10.10.0.0/24", "fd00:10::/64", "192.168.0.1/32"},
		PublicKey:  testKey,
		Endpoint:   &PeerEndpoint{DNSOrIP: DNSOrIP{IP: "203.0.113.7"}, Port: 51820},
	}
}

func TestValidatePeerSpec(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*PeerSpec)
		wantErr string // substring of the first error's field path; "" means valid
	}{
		{name: "valid", mutate: func(*PeerSpec) {}},
		{name: "valid roaming peer", mutate: func(s *PeerSpec) { s.Endpoint = nil; s.PersistentKeepalive = 25 }},
		{name: "valid dns endpoint", mutate: func(s *PeerSpec) { s.Endpoint.DNSOrIP = DNSOrIP{DNS: "gw.example.com"} }},
		{name: "valid ipv6 endpoint", mutate: func(s *PeerSpec) { s.Endpoint.DNSOrIP = DNSOrIP{IP: "2001:db8::1"} }},
		{name: "bare ip", mutate: func(s *PeerSpec) { s.AllowedIPs = []string{"10.0.0.1"} }, wantErr: "spec.allowedIPs[0]"},
		{name: "garbage cidr", mutate: func(s *PeerSpec) { s.AllowedIPs = append(s.AllowedIPs, "10.0.0.0/33") }, wantErr: "spec.allowedIPs[3]"},
		{name: "key not base64", mutate: func(s *PeerSpec) { s.PublicKey = "not a key" }, wantErr: "spec.publicKey"},
		{name: "key wrong length", mutate: func(s *PeerSpec) { s.PublicKey = "AAAA" }, wantErr: "spec.publicKey"},
		{name: "key url encoding", mutate: func(s *PeerSpec) { s.PublicKey = strings.NewReplacer("+", "-", "/", "_").Replace("+/" + testKey[2:]) }, wantErr: "spec.publicKey"},
		{name: "negative keepalive", mutate: func(s *PeerSpec) { s.PersistentKeepalive = -1 }, wantErr: "spec.persistentKeepalive"},
		{name: "port zero", mutate: func(s *PeerSpec) { s.Endpoint.Port = 0 }, wantErr: "spec.endpoint.port"},
		{name: "port too large", mutate: func(s *PeerSpec) { s.Endpoint.Port = 65536 }, wantErr: "spec.endpoint.port"},
		{name: "no dns nor ip", mutate: func(s *PeerSpec) { s.Endpoint.DNSOrIP = DNSOrIP{} }, wantErr: "spec.endpoint.dnsOrIP"},
		{name: "bad dns", mutate: func(s *PeerSpec) { s.Endpoint.DNSOrIP = DNSOrIP{DNS: "gw_1.example.com"} }, wantErr: "spec.endpoint.dnsOrIP.dns"},
		{name: "kgctl nil ip", mutate: func(s *PeerSpec) { s.Endpoint.DNSOrIP = DNSOrIP{IP: "<nil>"} }, wantErr: "spec.endpoint.dnsOrIP.ip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Peer{Spec: validSpec()}
			tt.mutate(&p.Spec)
			errs := p.Validate()
			if tt.wantErr == "" {
				if len(errs) != 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("want an error at %s, got none", tt.wantErr)
			}
			if got := errs[0].Field; got != tt.wantErr {
				t.Fatalf("want error at %s, got %s (%v)", tt.wantErr, got, errs)
			}
		})
	}
}

// The fast paths must give the verdicts of the net and base64 functions
// they stand in front of: those are kg's rules.
func FuzzFastPathsAgree(f *testing.F) {
	for _, s := range []string{
		"10.0.0.0/8", "10.0.0.1/32", "10.0.0.0/08", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/",
		"10.0.0.0/8/8", "10.0.0.1", "::/0", "fd00::/128", "fd00::/129", "::ffff:10.0.0.1/120", "fe80::1%eth0/64",
		"fe80::1%eth0", "010.0.0.1/8", " 10.0.0.0/8", "", "/", "203.0.113.7", "2001:db8::1", "<nil>",
		testKey, "AAAA", "not a key", "+/" + testKey[2:], testKey + "AAAA", strings.Repeat("A", 48), strings.Repeat("A", 52),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _, err := net.ParseCIDR(s)
		if got, want := isCIDR(s), err == nil; got != want {
			t.Errorf("isCIDR(%q) = %v, net.ParseCIDR says %v", s, got, want)
		}
		if got, want := isIP(s), net.ParseIP(s) != nil; got != want {
			t.Errorf("isIP(%q) = %v, net.ParseIP says %v", s, got, want)
		}
		b, wantErr := base64.StdEncoding.DecodeString(s)
		n, err := decodedLen(s)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) || (err == nil && n != len(b)) {
			t.Errorf("decodedLen(%q) = %d, %v; DecodeString gives %d bytes, %v", s, n, err, len(b), wantErr)
		}
	})
}

// A valid Peer costs no allocation to validate.
func TestValidateAllocatesNothing(t *testing.T) {
	p := &Peer{Spec: validSpec()}
	if n := testing.AllocsPerRun(100, func() { _ = p.Validate() }); n != 0 {
		t.Errorf("Validate of a valid Peer allocates %v times", n)
	}
}
