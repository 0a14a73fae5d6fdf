package admission

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

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

// fakeMembers answers identities from a table: the member caches' answers
// are the input of a pure decision here.
type fakeMembers struct {
	ids     map[string]map[string]string // by mesh name, by cluster name
	servers map[string][]string
	local   string
}

func (f fakeMembers) Identities(m *meshv1alpha1.ClusterMesh) map[string]string { return f.ids[m.Name] }
func (f fakeMembers) ServerIdentities(s string) []string                       { return f.servers[s] }
func (f fakeMembers) LocalIdentity() string                                    { return f.local }
func (f fakeMembers) CachedKubeconfig(types.NamespacedName, string) ([]byte, bool) {
	return nil, false
}

// TestCheckOtherMeshes: only verified claims of other meshes count, on a
// cluster both meshes may share, and a cluster's own networks are no conflict.
func TestCheckOtherMeshes(t *testing.T) {
	stored := &meshv1alpha1.ClusterMesh{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-z", Name: "theirs", UID: "t", CreationTimestamp: metav1.NewTime(time.Unix(2000, 0))},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{Name: "home", Local: true, PodCIDRs: []string{"10.42.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
			{Name: "far", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "s"}, PodCIDRs: []string{"10.52.0.0/16"}, WireguardCIDR: "10.5.0.0/16"},
			{Name: "unverified", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "u"}, PodCIDRs: []string{"10.62.0.0/16"}, WireguardCIDR: "10.6.0.0/16"},
		}},
	}
	meshes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := meshes.Add(stored); err != nil {
		t.Fatal(err)
	}
	members := fakeMembers{
		ids:     map[string]map[string]string{"theirs": {"home": "L", "far": "F", "unverified": ""}},
		servers: map[string][]string{"https://far:443": {"F"}},
		local:   "L",
	}
	ours := func(entries ...meshv1alpha1.ClusterEntry) *meshv1alpha1.ClusterMesh {
		return &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "mine", Name: "ours"}, Spec: meshv1alpha1.ClusterMeshSpec{Clusters: entries}}
	}
	local := meshv1alpha1.ClusterEntry{Name: "a", Local: true, PodCIDRs: []string{"10.42.0.0/16"}, WireguardCIDR: "10.4.0.0/16"}
	remote := func(pod string) meshv1alpha1.ClusterEntry {
		return meshv1alpha1.ClusterEntry{Name: "b", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "b"}, PodCIDRs: []string{pod}, WireguardCIDR: "10.9.0.0/16"}
	}
	// earlier is ours, stored before theirs, holding 10.52.128.0/17 already.
	earlier := func(m *meshv1alpha1.ClusterMesh) *meshv1alpha1.ClusterMesh {
		m.UID, m.CreationTimestamp = "o", metav1.NewTime(time.Unix(1000, 0))
		return m
	}
	storedOurs := earlier(ours(local, remote("10.52.128.0/17")))
	for _, tc := range []struct {
		name    string
		mesh    *meshv1alpha1.ClusterMesh
		old     *meshv1alpha1.ClusterMesh
		servers []string
		want    []string
	}{
		{"disjoint", ours(local, remote("10.72.0.0/16")), nil, []string{"", "https://x:443"}, nil},
		{"overlaps a verified claim on the shared local cluster", ours(local, remote("10.52.128.0/17")), nil, []string{"", "https://x:443"},
			[]string{"spec.clusters[1].podCIDRs[0]"}},
		{"overlaps only an unverified claim", ours(local, remote("10.62.0.0/24")), nil, []string{"", "https://x:443"}, nil},
		{"the same cluster as theirs: its own networks", ours(local, remote("10.52.0.0/16")), nil, []string{"", "https://far:443"}, nil},
		{"no cluster in common", ours(remote("10.52.0.0/16")), nil, []string{"https://x:443"}, nil},
		// A later mesh claiming what an earlier one holds blocks none of
		// the earlier one's updates, but cannot be joined on new networks.
		{"an earlier mesh's update keeps what it held", func() *meshv1alpha1.ClusterMesh {
			m := storedOurs.DeepCopy()
			m.Spec.Clusters[1].PersistentKeepalive = 25
			return m
		}(), storedOurs, []string{"", "https://x:443"}, nil},
		{"an earlier mesh adding a network the later one claims", func() *meshv1alpha1.ClusterMesh {
			m := storedOurs.DeepCopy()
			m.Spec.Clusters[1].AdditionalCIDRs = []string{"10.52.0.0/24"}
			return m
		}(), storedOurs, []string{"", "https://x:443"}, []string{"spec.clusters[1].additionalCIDRs[0]"}},
		{"a later mesh's update is checked against the earlier one's claims", func() *meshv1alpha1.ClusterMesh {
			m := storedOurs.DeepCopy()
			m.UID, m.CreationTimestamp = "z", metav1.NewTime(time.Unix(3000, 0))
			return m
		}(), storedOurs, []string{"", "https://x:443"}, []string{"spec.clusters[1].podCIDRs[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range checkOtherMeshes(tc.mesh, tc.old, refs(tc.mesh, tc.servers, members), meshes, members) {
				got = append(got, e.Field)
				for _, secret := range []string{"tenant-z", "theirs", "10.52.0.0/16", "far"} {
					if strings.Contains(e.Error(), secret) {
						t.Errorf("the error names %q of another tenant: %s", secret, e.Error())
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("errors at %v, want %v", got, tc.want)
			}
		})
	}
}
