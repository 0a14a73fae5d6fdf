package v1alpha1

import (
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
