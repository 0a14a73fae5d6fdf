package admission

import (
	"net/netip"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func mesh(clusters ...meshv1alpha1.ClusterEntry) *meshv1alpha1.ClusterMesh {
	return &meshv1alpha1.ClusterMesh{Spec: meshv1alpha1.ClusterMeshSpec{Clusters: clusters}}
}

func TestCheckAllowed(t *testing.T) {
	m := mesh(
		meshv1alpha1.ClusterEntry{Name: "a", PodCIDRs: []string{"10.42.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
		meshv1alpha1.ClusterEntry{Name: "b", PodCIDRs: []string{"172.20.0.0/16", "fd00:42::/56"}, WireguardCIDR: "10.5.0.0/16"},
	)
	tests := []struct {
		name    string
		allowed []string
		want    []string
	}{
		{name: "no limit", allowed: nil},
		{name: "all inside", allowed: []string{"10.0.0.0/8", "172.16.0.0/12", "fd00::/8"}},
		{name: "IPv6 not allowed", allowed: []string{"10.0.0.0/8", "172.16.0.0/12"}, want: []string{"spec.clusters[1].podCIDRs[1]"}},
		{name: "allowed range smaller than the claim", allowed: []string{"10.42.0.0/17", "10.4.0.0/15", "172.20.0.0/16", "fd00::/8"},
			want: []string{"spec.clusters[0].podCIDRs[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var allowed []netip.Prefix
			for _, s := range tt.allowed {
				allowed = append(allowed, netip.MustParsePrefix(s))
			}
			errs := checkAllowed(m, allowed)
			if len(errs) != len(tt.want) {
				t.Fatalf("want %v, got %v", tt.want, errs)
			}
			for i, e := range errs {
				if e.Field != tt.want[i] {
					t.Errorf("error %d at %s, want %s", i, e.Field, tt.want[i])
				}
			}
		})
	}
}

func TestOverlapping(t *testing.T) {
	ours := &meshv1alpha1.ClusterEntry{Name: "a", PodCIDRs: []string{"10.42.0.0/16"}, WireguardCIDR: "10.4.0.0/16", ServiceCIDR: "10.43.0.0/16"}
	theirs := &meshv1alpha1.ClusterEntry{Name: "z", PodCIDRs: []string{"10.42.128.0/17"}, WireguardCIDR: "10.9.0.0/16"}
	got := overlapping(ours, 2, theirs)
	if len(got) != 1 || got[0].Path.String() != "spec.clusters[2].podCIDRs[0]" {
		t.Fatalf("want the pod CIDR of entry 2, got %v", got)
	}
	if got := overlapping(ours, 0, &meshv1alpha1.ClusterEntry{PodCIDRs: []string{"192.168.0.0/16"}}); len(got) != 0 {
		t.Fatalf("disjoint networks reported: %v", got)
	}
}

func TestShareCluster(t *testing.T) {
	if shareCluster([]string{"local", ""}, []string{"", "https://b.example.com:443"}) {
		t.Error("unknown identities must not count as shared")
	}
	if !shareCluster([]string{"local", "https://a.example.com:443"}, []string{"https://a.example.com:443"}) {
		t.Error("same server not seen as shared")
	}
}
