package admission

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestCheckServicesClusters: a cluster verified by another tenant's mesh
// with services Enabled cannot join a second one, whatever its namespace;
// unverified entries, meshes with services Disabled and an earlier mesh's
// own entries are not refused, and no error names the other tenant.
func TestCheckServicesClusters(t *testing.T) {
	on, off := meshv1alpha1.MultiClusterServicesEnabled, meshv1alpha1.MultiClusterServicesDisabled
	theirs := func(services meshv1alpha1.MultiClusterServices) *meshv1alpha1.ClusterMesh {
		return &meshv1alpha1.ClusterMesh{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-z", Name: "theirs", UID: "t", CreationTimestamp: metav1.NewTime(time.Unix(2000, 0))},
			Spec: meshv1alpha1.ClusterMeshSpec{MultiClusterServices: services, Clusters: []meshv1alpha1.ClusterEntry{
				{Name: "far", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "s"}},
				{Name: "unverified", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "u"}},
			}},
		}
	}
	members := fakeMembers{
		ids:     map[string]map[string]string{"theirs": {"far": "F", "unverified": ""}},
		servers: map[string][]string{"https://far:443": {"F"}, "https://other:443": {"O"}},
	}
	entry := func(name string) meshv1alpha1.ClusterEntry {
		return meshv1alpha1.ClusterEntry{Name: name, KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: name}}
	}
	ours := func(services meshv1alpha1.MultiClusterServices) *meshv1alpha1.ClusterMesh {
		return &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "mine", Name: "ours"},
			Spec: meshv1alpha1.ClusterMeshSpec{MultiClusterServices: services, Clusters: []meshv1alpha1.ClusterEntry{entry("a"), entry("b")}}}
	}
	earlier := func(m *meshv1alpha1.ClusterMesh) *meshv1alpha1.ClusterMesh {
		m.UID, m.CreationTimestamp = "o", metav1.NewTime(time.Unix(1000, 0))
		return m
	}
	shared := []string{"https://other:443", "https://far:443"}
	for _, tc := range []struct {
		name    string
		stored  meshv1alpha1.MultiClusterServices
		mesh    *meshv1alpha1.ClusterMesh
		old     *meshv1alpha1.ClusterMesh
		servers []string
		want    []string
	}{
		{"enabling on a cluster another mesh serves", on, ours(on), nil, shared, []string{"spec.multiClusterServices"}},
		{"the other mesh has services Disabled", off, ours(on), nil, shared, nil},
		{"ours has services Disabled", on, ours(off), nil, shared, nil},
		{"no cluster in common", on, ours(on), nil, []string{"https://other:443", "https://x:443"}, nil},
		{"the other mesh's entry is not verified", on, ours(on), nil, []string{"https://other:443", ""}, nil},
		{"a mesh serving services adds the shared cluster", on, ours(on), func() *meshv1alpha1.ClusterMesh {
			m := ours(on)
			m.Spec.Clusters[1] = entry("c")
			return m
		}(), shared, []string{"spec.clusters[1]"}},
		// The mesh that had the cluster with services first keeps it.
		{"an earlier mesh's update keeps its cluster", on, earlier(ours(on)), earlier(ours(on)), shared, nil},
		{"an earlier mesh enabling services later is refused", on, earlier(ours(on)), earlier(ours(off)), shared, []string{"spec.multiClusterServices"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meshes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if err := meshes.Add(theirs(tc.stored)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range checkServicesClusters(tc.mesh, tc.old, refs(tc.mesh, tc.servers, members), meshes, members) {
				got = append(got, e.Field)
				for _, secret := range []string{"tenant-z", "theirs", "far", "https://"} {
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
