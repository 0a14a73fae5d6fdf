package planner

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // String() of the result
		dns     bool
		wantErr string
	}{
		{in: "203.0.113.1:51820", want: "203.0.113.1:51820"},
		{in: "[2001:db8::1]:51820", want: "[2001:db8::1]:51820"},
		{in: "[::ffff:198.51.100.7]:443", want: "198.51.100.7:443"},
		{in: "wg.example.com:51820", want: "wg.example.com:51820", dns: true},
		{in: "node-1:1", want: "node-1:1", dns: true},
		{in: "wg.example.com:065535", want: "wg.example.com:65535", dns: true},
		{in: "", wantErr: "empty"},
		{in: "203.0.113.1", wantErr: "missing port"},
		{in: "2001:db8::1:51820", wantErr: "too many colons"},
		{in: "203.0.113.1:0", wantErr: "port must be"},
		{in: "203.0.113.1:65536", wantErr: "port must be"},
		{in: "203.0.113.1:-1", wantErr: "port must be"},
		{in: "203.0.113.1:+80", wantErr: "port must be"},
		{in: "203.0.113.1:http", wantErr: "port must be"},
		{in: ":51820", wantErr: "neither an IP nor a DNS name"},
		{in: "Wg.Example.com:51820", wantErr: "neither an IP nor a DNS name"},
		{in: "wg_1.example.com:51820", wantErr: "neither an IP nor a DNS name"},
		{in: "[fe80::1%eth0]:51820", wantErr: "zone"},
		{in: "0.0.0.0:51820", wantErr: "unspecified"},
		{in: "[::]:51820", wantErr: "unspecified"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			e, err := ParseEndpoint(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseEndpoint(%q) = %v, %v; want error containing %q", tc.in, e, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEndpoint(%q): %v", tc.in, err)
			}
			if got := e.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if (e.DNS != "") != tc.dns {
				t.Errorf("DNS = %q, want DNS: %v", e.DNS, tc.dns)
			}
		})
	}
}

// kg reads force-endpoint and endpoint leniently; readiness must follow it.
func TestParseKiloEndpointAcceptsWhatKgAccepts(t *testing.T) {
	for _, s := range []string{"0.0.0.0:51820", "[fe80::1%eth0]:51820"} {
		if _, err := parseKiloEndpoint(s); err != nil {
			t.Errorf("parseKiloEndpoint(%q): %v; kg accepts it", s, err)
		}
	}
}

func TestEndpointIsPublic(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"10.1.2.3:1", false},
		{"172.16.0.1:1", false},
		{"172.31.255.255:1", false},
		{"172.32.0.1:1", true},
		{"192.168.1.1:1", false},
		{"192.169.1.1:1", true},
		{"100.64.0.1:1", true}, // CGNAT is public to Kilo
		{"203.0.113.1:1", true},
		{"[fd00::1]:1", false},
		{"[fd12::1]:1", true}, // Kilo compares two bytes only
		{"[2001:db8::1]:1", true},
		{"wg.example.com:1", false}, // a DNS name is never public
	} {
		e, err := ParseEndpoint(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.IsPublic(); got != tc.want {
			t.Errorf("IsPublic(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestPeerEndpointSetsExactlyOne(t *testing.T) {
	for _, s := range []string{"wg.example.com:51820", "203.0.113.1:51820", "[2001:db8::1]:51820", "[::ffff:203.0.113.1]:51820", "[fd00::1]:1"} {
		e, err := ParseEndpoint(s)
		if err != nil {
			t.Fatal(err)
		}
		var buf kilov1alpha1.PeerEndpoint
		pe := e.peerEndpoint(&buf, e.String())
		if (pe.DNSOrIP.DNS == "") == (pe.DNSOrIP.IP == "") {
			t.Errorf("%s: dns=%q ip=%q; want exactly one", s, pe.DNSOrIP.DNS, pe.DNSOrIP.IP)
		}
		if e.DNS == "" && pe.DNSOrIP.IP != e.Addr.String() {
			t.Errorf("%s: ip=%q, want %q", s, pe.DNSOrIP.IP, e.Addr.String())
		}
		if int(pe.Port) != int(e.Port) {
			t.Errorf("%s: port %d", s, pe.Port)
		}
		p := kilov1alpha1.Peer{Spec: kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.0.0.0/24"}, PublicKey: "t8kWCuEeKmb6bV/Tpx0byyzoFe1KK6F3LpnDV/yBe+A=", Endpoint: pe}}
		if errs := p.Validate(); len(errs) > 0 {
			t.Errorf("%s: %v", s, errs)
		}
	}
	if (Endpoint{}).peerEndpoint(&kilov1alpha1.PeerEndpoint{}, "") != nil {
		t.Error("the zero endpoint must render as no endpoint (a roaming Peer)")
	}
}

// FuzzParseEndpoint checks that whatever parses can be written into a Peer
// that passes Kilo's validation and reads back the same.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{
		"203.0.113.1:51820", "[2001:db8::1]:51820", "wg.example.com:51820", "[::ffff:1.2.3.4]:1",
		"a:65535", "[fe80::1%eth0]:1", "0.0.0.0:1", ":1", "x:0", "1.2.3.4", "[1::]:65536", "a..b:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEndpoint(s)
		if err != nil {
			return
		}
		if e.IsZero() || e.Port == 0 {
			t.Fatalf("ParseEndpoint(%q) = %#v without error", s, e)
		}
		var pe kilov1alpha1.PeerEndpoint
		p := kilov1alpha1.Peer{Spec: kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.0.0.0/24"}, PublicKey: "t8kWCuEeKmb6bV/Tpx0byyzoFe1KK6F3LpnDV/yBe+A=", Endpoint: e.peerEndpoint(&pe, e.String())}}
		if errs := p.Validate(); len(errs) > 0 {
			t.Fatalf("ParseEndpoint(%q) gives a Peer Kilo rejects: %v", s, errs)
		}
		if e.DNS == "" && pe.DNSOrIP.IP != e.Addr.String() {
			t.Fatalf("ParseEndpoint(%q): Peer IP %q, want %q", s, pe.DNSOrIP.IP, e.Addr.String())
		}
		again, err := ParseEndpoint(e.String())
		if err != nil || again != e {
			t.Fatalf("round trip of %q via %q: %#v, %v", s, e.String(), again, err)
		}
		if e.Addr.IsValid() && (e.Addr.Is4In6() || e.Addr.Zone() != "") {
			t.Fatalf("ParseEndpoint(%q) keeps a mapped or zoned address %v", s, e.Addr)
		}
	})
}

// Endpoint strings are written without net.JoinHostPort now; they must
// read exactly as it writes them.
func TestEndpointStringIsJoinHostPort(t *testing.T) {
	for _, e := range []Endpoint{
		{Addr: netip.MustParseAddr("203.0.113.1"), Port: 51820},
		{Addr: netip.MustParseAddr("2001:db8::1"), Port: 1},
		{Addr: netip.MustParseAddr("::ffff:203.0.113.1"), Port: 65535},
		{Addr: netip.MustParseAddr("fe80::1%eth0"), Port: 51820},
		{DNS: "wg.example.com", Port: 51820},
		{DNS: "odd:name", Port: 7},
	} {
		host := e.DNS
		if host == "" {
			host = e.Addr.String()
		}
		if got, want := e.String(), net.JoinHostPort(host, strconv.Itoa(int(e.Port))); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	if s := (Endpoint{}).String(); s != "" {
		t.Errorf("the zero endpoint reads %q", s)
	}
}
