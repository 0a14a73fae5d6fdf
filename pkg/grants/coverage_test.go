package grants

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func grant(name string, spec meshv1alpha1.ClusterMeshGrantSpec) *meshv1alpha1.ClusterMeshGrant {
	return &meshv1alpha1.ClusterMeshGrant{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func selector(s *metav1.LabelSelector) meshv1alpha1.ClusterMeshGrantSpec {
	return meshv1alpha1.ClusterMeshGrantSpec{NamespaceSelector: s}
}

func TestCovers(t *testing.T) {
	team := map[string]string{"team": "net", "env": "prod"}
	tests := []struct {
		name   string
		spec   meshv1alpha1.ClusterMeshGrantSpec
		ns     string
		labels map[string]string
		want   bool
	}{
		{"by name", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"a", "b"}}, "b", nil, true},
		{"other name", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"a"}}, "ab", nil, false},
		{"no selector, no name", meshv1alpha1.ClusterMeshGrantSpec{}, "a", team, false},
		{"matchLabels", selector(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "net"}}), "x", team, true},
		{"matchLabels, other value", selector(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}), "x", team, false},
		{"matchLabels, namespace without labels", selector(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "net"}}), "x", nil, false},
		{"matchExpressions In", selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "stage"}}}}), "x", team, true},
		{"matchExpressions DoesNotExist", selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpDoesNotExist}}}), "x", team, false},
		{"empty selector matches every namespace", selector(&metav1.LabelSelector{}), "x", nil, true},
		{"either suffices", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"a"},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}}, "a", team, true},
		{"invalid selector covers nothing", selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: "Near"}}}), "x", team, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Covers(grant("g", tt.spec), tt.ns, tt.labels); got != tt.want {
				t.Errorf("Covers = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	grants := []*meshv1alpha1.ClusterMeshGrant{
		grant("z-wide", meshv1alpha1.ClusterMeshGrantSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "net"}},
			MemberNetworks: []string{"10.52.0.0/16", "fd00::/8"}, MemberServers: []string{"127.0.0.0/8"}, ServiceNamespaces: []string{"web", "shop"}}),
		grant("a-local", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"tenant-a"},
			MemberNetworks: []string{"10.52.0.0/16"}, LocalNetworks: []string{"10.42.0.0/16", "bogus"}, ServiceNamespaces: []string{"shop"}}),
		grant("other", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"tenant-b"}, MemberNetworks: []string{"192.168.0.0/16"},
			MaxHostPeers: ptr.To[int32](50_000), MaxHostPeerKiB: ptr.To[int32](1 << 20)}),
		grant("small", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"tenant-a"}, MaxHostPeers: ptr.To[int32](10), MaxHostPeerKiB: ptr.To[int32](64)}),
	}
	c := Evaluate(grants, "tenant-a", map[string]string{"team": "net"})
	if !c.Covered() || !slices.Equal(c.Grants, []string{"a-local", "small", "z-wide"}) {
		t.Fatalf("grants %v", c.Grants)
	}
	prefixes := func(ps ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, p := range ps {
			out = append(out, netip.MustParsePrefix(p))
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		got, wantP []netip.Prefix
	}{
		{"memberNetworks: union, deduplicated", c.MemberNetworks, prefixes("10.52.0.0/16", "fd00::/8")},
		{"localNetworks: the unparseable entry only narrows", c.LocalNetworks, prefixes("10.42.0.0/16")},
		{"memberServers", c.MemberServers, prefixes("127.0.0.0/8")},
	} {
		if !slices.Equal(tc.got, tc.wantP) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.wantP)
		}
	}
	if !slices.Equal(c.ServiceNamespaces, []string{"shop", "web"}) {
		t.Errorf("serviceNamespaces %v, want the union, sorted and unique", c.ServiceNamespaces)
	}
	// A grant without limits counts with the defaults, and the largest wins:
	// another namespace's larger grant does not count.
	if c.MaxHostPeers != meshv1alpha1.DefaultMaxHostPeers || c.MaxHostPeerBytes != meshv1alpha1.DefaultMaxHostPeerKiB<<10 {
		t.Errorf("host Peer limits %d, %d bytes; want the defaults", c.MaxHostPeers, c.MaxHostPeerBytes)
	}
	if c := Evaluate(grants[3:], "tenant-a", nil); c.MaxHostPeers != 10 || c.MaxHostPeerBytes != 64<<10 {
		t.Errorf("host Peer limits of the small grant alone: %d, %d bytes", c.MaxHostPeers, c.MaxHostPeerBytes)
	}
	if c := Evaluate(grants, "tenant-c", nil); c.Covered() || len(c.MemberNetworks) > 0 {
		t.Errorf("an uncovered namespace is allowed %+v", c)
	}
}

func TestOutsideGrant(t *testing.T) {
	mesh := func(remote ...string) *meshv1alpha1.ClusterMesh {
		return &meshv1alpha1.ClusterMesh{Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{Name: "host", Local: true, PodCIDRs: []string{"10.42.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
			{Name: "far", PodCIDRs: []string{"10.52.0.0/16"}, WireguardCIDR: "10.5.0.0/16", AdditionalCIDRs: remote},
		}}}
	}
	cov := &Coverage{Namespace: "tenant-a", Grants: []string{"g"},
		MemberNetworks: []netip.Prefix{netip.MustParsePrefix("10.52.0.0/16"), netip.MustParsePrefix("10.5.0.0/16")},
		LocalNetworks:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	tests := []struct {
		name   string
		mesh   *meshv1alpha1.ClusterMesh
		cov    *Coverage
		fields []string
	}{
		{"inside", mesh(), cov, nil},
		{"a smaller network inside", mesh("10.52.0.0/24"), cov, nil},
		// Neither half is a default route, and neither lies inside the grant.
		{"the two halves of IPv4", mesh("0.0.0.0/1", "128.0.0.0/1"), cov,
			[]string{"spec.clusters[1].additionalCIDRs[0]", "spec.clusters[1].additionalCIDRs[1]"}},
		{"a network larger than the one granted", mesh("10.52.0.0/15"), cov, []string{"spec.clusters[1].additionalCIDRs[0]"}},
		{"a /32 outside", mesh("192.0.2.1/32"), cov, []string{"spec.clusters[1].additionalCIDRs[0]"}},
		{"the local cluster is held to localNetworks, not memberNetworks", mesh(), &Coverage{Namespace: "tenant-a", Grants: []string{"g"},
			MemberNetworks: cov.MemberNetworks}, []string{"spec.clusters[0].podCIDRs[0]", "spec.clusters[0].wireguardCIDR"}},
		{"unparseable networks are validation's", mesh("garbage"), cov, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := OutsideGrant(tt.mesh, tt.cov)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				if !strings.Contains(e.Detail, `namespace "tenant-a"`) {
					t.Errorf("detail does not say which grants: %s", e.Detail)
				}
			}
			if !slices.Equal(got, tt.fields) {
				t.Errorf("errors at %v, want %v: %v", got, tt.fields, errs)
			}
		})
	}
}
