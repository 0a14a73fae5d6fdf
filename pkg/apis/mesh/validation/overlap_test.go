package validation

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// pairwiseFirst is the definition the sweep must match: for each i, the
// smallest j != i whose key is smallest among those overlapping i.
func pairwiseFirst(prefixes []netip.Prefix, key []int) []int {
	out := make([]int, len(prefixes))
	for i := range prefixes {
		out[i] = noPartner
		for j := range prefixes {
			if i != j && prefixes[i].Overlaps(prefixes[j]) {
				out[i] = min(out[i], key[j])
			}
		}
	}
	return out
}

// randomPrefixes draws prefixes from a small space, so that they nest,
// repeat and mix families often.
func randomPrefixes(r *rand.Rand, n int) []netip.Prefix {
	out := make([]netip.Prefix, n)
	for i := range out {
		if r.IntN(4) == 0 {
			a := netip.AddrFrom16([16]byte{0xfd, 0, byte(r.IntN(4)), byte(r.IntN(256))})
			out[i] = netip.PrefixFrom(a, 16+r.IntN(17)).Masked()
			continue
		}
		a := netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), 0})
		out[i] = netip.PrefixFrom(a, 8+r.IntN(17)).Masked()
	}
	return out
}

// TestMinOverlapping: the sweep gives exactly what comparing every pair
// gives, on random sets full of nesting, repeats and both families.
func TestMinOverlapping(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		prefixes := randomPrefixes(r, 1+r.IntN(40))
		key := make([]int, len(prefixes))
		for i := range key {
			key[i] = i
			if r.IntN(3) == 0 {
				key[i] = noPartner
			}
		}
		got, want := minOverlapping(prefixes, key), pairwiseFirst(prefixes, key)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d: prefixes %v keys %v: answer of %d is %d, want %d", round, prefixes, key, i, got[i], want[i])
			}
		}
	}
}

func TestOverlapsWith(t *testing.T) {
	parse := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	ours := parse("10.1.0.0/16", "10.2.0.0/24", "fd00::/64", "192.168.0.0/24", "10.0.0.0/8")
	theirs := parse("10.2.0.128/25", "10.1.0.0/16", "fd00::/56")
	got := OverlapsWith(ours, theirs)
	// 10.0.0.0/8 contains the first two of theirs: the first is named.
	want := []int{1, 0, 2, -1, 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("OverlapsWith = %v, want %v", got, want)
	}
	if got := OverlapsWith(ours, nil); fmt.Sprint(got) != "[-1 -1 -1 -1 -1]" {
		t.Errorf("against nothing: %v", got)
	}
}

// TestValidateNoOverlapNamesTheFirst: each network overlapping an earlier
// one is reported once, naming the first it overlaps, as users read them.
func TestValidateNoOverlapNamesTheFirst(t *testing.T) {
	p := field.NewPath("n")
	var nets []Network
	for i, s := range []string{"10.4.0.0/16", "10.42.0.0/16", "10.4.128.0/17", "10.0.0.0/8", "10.42.0.0/16"} {
		nets = append(nets, Network{Prefix: netip.MustParsePrefix(s), Path: p.Index(i)})
	}
	var got []string
	for _, e := range validateNoOverlap(nets) {
		got = append(got, e.Field+": "+e.Detail)
	}
	want := []string{
		"n[2]: overlaps n[0] (10.4.0.0/16)",
		"n[3]: overlaps n[0] (10.4.0.0/16)",
		"n[4]: overlaps n[1] (10.42.0.0/16)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLimits(t *testing.T) {
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		mutate func(m *meshv1alpha1.ClusterMesh)
		want   []string
	}{
		{"at the per-cluster limit", func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[1].AdditionalCIDRs = many(MaxNetworksPerCluster - 3)
		}, nil},
		{"one list too long", func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[1].AdditionalCIDRs = many(MaxNetworksPerCluster + 1)
		}, []string{"spec.clusters[1].additionalCIDRs"}},
		{"lists together too long", func(m *meshv1alpha1.ClusterMesh) {
			all := many(MaxNetworksPerCluster)
			m.Spec.Clusters[1].AdditionalCIDRs, m.Spec.Clusters[1].NodeCIDRs = all[:200], all[200:]
		}, []string{"spec.clusters[1]"}},
		{"too many clusters", func(m *meshv1alpha1.ClusterMesh) {
			for i := len(m.Spec.Clusters); i <= MaxClusters; i++ {
				m.Spec.Clusters = append(m.Spec.Clusters, meshv1alpha1.ClusterEntry{Name: fmt.Sprintf("c%d", i)})
			}
		}, []string{"spec.clusters"}},
		{"too many networks in the mesh", func(m *meshv1alpha1.ClusterMesh) {
			all := many(MaxNetworksPerMesh)
			for i := 0; len(all) > 0; i++ {
				n := min(len(all), MaxNetworksPerCluster-2)
				m.Spec.Clusters = append(m.Spec.Clusters, meshv1alpha1.ClusterEntry{Name: fmt.Sprintf("c%d", i), PodCIDRs: all[:n], WireguardCIDR: "10.9.0.0/16"})
				all = all[n:]
			}
		}, []string{"spec.clusters"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := validMesh()
			tc.mutate(m)
			var got []string
			for _, e := range validateLimits(&m.Spec, field.NewPath("spec")) {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("errors at %v, want %v", got, tc.want)
			}
		})
	}
}

// hugeSpec is the huge-spec attack: one entry with n additional CIDRs.
func hugeSpec(n int) *meshv1alpha1.ClusterMesh {
	m := validMesh()
	cidrs := make([]string, n)
	for i := range cidrs {
		cidrs[i] = fmt.Sprintf("%d.%d.%d.0/24", 11+i/65536, i/256%256, i%256)
	}
	m.Spec.Clusters[1].AdditionalCIDRs = cidrs
	return m
}

// BenchmarkValidateHugeSpec: what one create of a 40,000-CIDR mesh costs
// validation now (refused by the limits before anything is parsed).
func BenchmarkValidateHugeSpec(b *testing.B) {
	m := hugeSpec(40000)
	b.ReportAllocs()
	for b.Loop() {
		if errs := ValidateClusterMesh(m); len(errs) == 0 {
			b.Fatal("a 40,000-CIDR mesh was accepted")
		}
	}
}

// BenchmarkOverlapCheck: the overlap check itself at 40,000 networks, had
// the limits let them through (the pairwise check took about 7 s here).
func BenchmarkOverlapCheck(b *testing.B) {
	for _, n := range []int{MaxNetworksPerMesh, 40000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m := hugeSpec(n)
			nets, _ := ClusterNetworks(&m.Spec.Clusters[1], field.NewPath("spec", "clusters").Index(1))
			b.ReportAllocs()
			for b.Loop() {
				if errs := validateNoOverlap(nets); len(errs) != 0 {
					b.Fatalf("disjoint networks reported: %v", errs[0])
				}
			}
		})
	}
}
