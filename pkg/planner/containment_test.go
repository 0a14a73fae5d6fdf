package planner

import (
	"math/rand"
	"net/netip"
	"testing"
)

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"10.1.2.3/24":          "10.1.2.0/24",
		"::ffff:10.1.2.3/120":  "10.1.2.0/24",
		"fd10::123/120":        "fd10::100/120",
		"10.1.2.3/32":          "10.1.2.3/32",
		"::ffff:10.1.2.3/90":   "0.0.0.0/0",
		"2001:db8::ff/128":     "2001:db8::ff/128",
		"192.168.255.255/17":   "192.168.128.0/17",
		"0.0.0.0/0":            "0.0.0.0/0",
		"::ffff:0.0.0.0/96":    "0.0.0.0/0",
		"fd10::600/120":        "fd10::600/120",
		"10.255.255.255/8":     "10.0.0.0/8",
		"255.255.255.255/1":    "128.0.0.0/1",
		"fd10:0:0:ff::1/56":    "fd10::/56",
		"::/0":                 "::/0",
		"::1/128":              "::1/128",
		"100.64.33.1/10":       "100.64.0.0/10",
		"172.31.255.255/12":    "172.16.0.0/12",
		"10.10.1.0/24":         "10.10.1.0/24",
		"2600:1f18::11/64":     "2600:1f18::/64",
		"::ffff:192.0.2.1/128": "192.0.2.1/32",
	} {
		p, err := netip.ParsePrefix(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := canonical(p).String(); got != want {
			t.Errorf("canonical(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestLastAddr(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.0/8": "10.255.255.255", "10.1.2.3/32": "10.1.2.3", "0.0.0.0/0": "255.255.255.255",
		"fd10::/120": "fd10::ff", "::/0": "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	} {
		if got := lastAddr(netip.MustParsePrefix(in)).String(); got != want {
			t.Errorf("lastAddr(%s) = %s, want %s", in, got, want)
		}
	}
}

// The index must agree with a brute-force overlap check on random prefixes
// of both families, nested or not.
func TestPrefixIndexAgreesWithBruteForce(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		set := make([]netip.Prefix, r.Intn(30))
		for i := range set {
			set[i] = randomPrefix(r)
		}
		x := newPrefixIndex(set, make([]int, len(set)))
		for q := 0; q < 50; q++ {
			p := randomPrefix(r)
			_, want := overlapsAny(p, set)
			got, _, ok := x.overlap(p)
			if ok != want || (ok && !got.Overlaps(p)) {
				t.Fatalf("seed %d: overlap(%s) = %s, %v; brute force says %v (set %v)", seed, p, got, ok, want, set)
			}
		}
	}
	var empty *prefixIndex
	if _, _, ok := empty.overlap(netip.MustParsePrefix("10.0.0.0/8")); ok {
		t.Error("nil index overlaps")
	}
}

// randomPrefix draws from a small space, so that overlaps are common.
func randomPrefix(r *rand.Rand) netip.Prefix {
	if r.Intn(4) == 0 {
		b := [16]byte{0xfd, 0x10}
		b[15] = byte(r.Intn(256))
		return netip.PrefixFrom(netip.AddrFrom16(b), 120+r.Intn(9)).Masked()
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(r.Intn(4)), byte(r.Intn(256))}), 20+r.Intn(13)).Masked()
}
