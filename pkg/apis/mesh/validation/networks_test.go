package validation

import (
	"net/netip"
	"testing"
)

func TestWithin(t *testing.T) {
	nets := []netip.Prefix{netip.MustParsePrefix("10.10.0.0/16"), netip.MustParsePrefix("fd10::/56")}
	for in, want := range map[string]bool{
		"10.10.1.0/24": true, "10.10.0.0/16": true, "10.0.0.0/8": false, "10.11.0.0/24": false,
		"fd10::100/120": true, "fd11::/120": false, "10.10.255.255/32": true,
		// A network straddling the edge is not inside, though it overlaps.
		"10.10.0.0/15": false,
	} {
		if got := Within(netip.MustParsePrefix(in), nets); got != want {
			t.Errorf("Within(%s) = %v, want %v", in, got, want)
		}
	}
	if Within(netip.MustParsePrefix("10.10.1.0/24"), nil) {
		t.Error("a prefix is within an empty list")
	}
}

func TestJoinPrefixes(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"10.0.0.0/8"}, "10.0.0.0/8"},
		{[]string{"10.0.0.0/8", "fd00::/8"}, "10.0.0.0/8, fd00::/8"},
	} {
		var ps []netip.Prefix
		for _, s := range tc.in {
			ps = append(ps, netip.MustParsePrefix(s))
		}
		if got := JoinPrefixes(ps); got != tc.want {
			t.Errorf("JoinPrefixes(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
