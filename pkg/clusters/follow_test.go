package clusters

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestFollowMeshes: a stored mesh declares its clusters to the member
// caches; a deleted one, also when the informer only saw a tombstone,
// releases them.
func TestFollowMeshes(t *testing.T) {
	m, err := NewManager(Config{Local: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	mesh := &meshv1alpha1.ClusterMesh{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "uid-1", ResourceVersion: "1"},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{Name: "a", Local: true, PodCIDRs: []string{"10.1.0.0/16"}, WireguardCIDR: "10.2.0.0/16"},
			{Name: "b", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "b"}, PodCIDRs: []string{"10.3.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
		}},
	}
	// What the member caches say of a cluster no stored mesh names.
	unknown := m.Snapshot(mesh)["a"].LastError
	followed := func() bool { return m.Snapshot(mesh)["a"].LastError != unknown }
	for _, deleted := range []any{mesh, cache.DeletedFinalStateUnknown{Key: "ns/m", Obj: mesh}} {
		t.Run(fmt.Sprintf("%T", deleted), func(t *testing.T) {
			m.followObject(mesh)
			if !followed() {
				t.Fatalf("after an add: the local cluster is not followed: %+v", m.Snapshot(mesh)["a"])
			}
			m.forgetObject(deleted)
			if followed() {
				t.Errorf("after deleting %T: the local cluster is still followed", deleted)
			}
		})
	}
}
