package plancache

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// newMembers is a real member-cluster manager that is never run: its
// clusters stay unsynced, which is all the cache's bookkeeping needs.
func newMembers(t *testing.T) *clusters.Manager {
	t.Helper()
	members, err := clusters.NewManager(clusters.Config{Local: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	return members
}

func testMesh() *meshv1alpha1.ClusterMesh {
	return &meshv1alpha1.ClusterMesh{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "uid-1", ResourceVersion: "1"},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{Name: "a", Local: true, PodCIDRs: []string{"10.1.0.0/16"}, WireguardCIDR: "10.2.0.0/16"},
			{Name: "b", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "b"}, PodCIDRs: []string{"10.3.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
		}},
	}
}

// TestCache: one plan per change, shared by every caller, and never older
// than a change, a new version of the mesh, or MaxAge.
func TestCache(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	c, err := New(Config{Members: newMembers(t), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	mesh := testMesh()
	first, err := c.Plan(mesh)
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string, want bool, mutate func()) {
		t.Helper()
		mutate()
		got, err := c.Plan(mesh)
		if err != nil {
			t.Fatal(err)
		}
		if (got == first) != want {
			t.Errorf("%s: reused %v, want %v", name, got == first, want)
		}
		first = got
	}
	key := types.NamespacedName{Namespace: "ns", Name: "m"}
	same("repeated", true, func() {})
	same("within max age", true, func() { clk.SetTime(clk.Now().Add(MaxAge / 2)) })
	same("after max age", false, func() { clk.SetTime(clk.Now().Add(MaxAge)) })
	same("after a change of its inputs", false, func() { c.invalidate(key) })
	same("after a change of another mesh", true, func() { c.invalidate(types.NamespacedName{Namespace: "ns", Name: "other"}) })
	same("new resourceVersion", false, func() { mesh.ResourceVersion = "2" })
	same("recreated with another UID", false, func() { mesh.UID = "uid-2" })
	same("forgotten", false, func() { c.forget(key) })
}

func TestNewRequiresMembers(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without Members succeeded")
	}
}

// TestFollowMeshes: a deleted mesh, also when the informer only saw a
// tombstone, releases its plan. (Its member connections follow the
// informer through clusters.Manager.FollowMeshes, tested there.)
func TestFollowMeshes(t *testing.T) {
	members := newMembers(t)
	c, err := New(Config{Members: members})
	if err != nil {
		t.Fatal(err)
	}
	mesh := testMesh()
	for _, deleted := range []any{mesh, cache.DeletedFinalStateUnknown{Key: "ns/m", Obj: mesh}} {
		c.meshSeen(mesh)
		if _, err := c.Plan(mesh); err != nil {
			t.Fatal(err)
		}
		c.release(deleted)
		c.mu.Lock()
		kept := c.plans[types.NamespacedName{Namespace: "ns", Name: "m"}] != nil
		c.mu.Unlock()
		if kept {
			t.Errorf("after deleting %T: the plan is still cached", deleted)
		}
	}
}

// TestSnapshot: what the planner may rely on of a member cluster's caches.
func TestSnapshot(t *testing.T) {
	nodes := chunklist.Of([]*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}, chunklist.ByName[*corev1.Node])
	expiry := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   clusters.ClusterState
		want planner.ClusterSnapshot
	}{
		{"never synced, no error yet", clusters.ClusterState{Reachable: true},
			planner.ClusterSnapshot{Error: "the caches of this cluster have not synced yet"}},
		{"never synced, with the reason", clusters.ClusterState{LastError: "Secret ns/b not found", Nodes: nodes},
			planner.ClusterSnapshot{Error: "Secret ns/b not found"}},
		{"synced and answering", clusters.ClusterState{Synced: true, Reachable: true, Nodes: nodes},
			planner.ClusterSnapshot{Reachable: true, Nodes: nodes}},
		{"synced, then stopped answering: last known nodes kept", clusters.ClusterState{Synced: true, LastError: "timeout", Nodes: nodes},
			planner.ClusterSnapshot{Error: "timeout", Nodes: nodes}},
		{"credential expiry of a synced cluster", clusters.ClusterState{Synced: true, Reachable: true, Nodes: nodes, CredentialExpiry: expiry},
			planner.ClusterSnapshot{Reachable: true, Nodes: nodes, CredentialExpiry: expiry}},
		{"credential expiry of a cluster refusing it", clusters.ClusterState{LastError: "Unauthorized", CredentialExpiry: expiry},
			planner.ClusterSnapshot{Error: "Unauthorized", CredentialExpiry: expiry}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := snapshot(tc.in)
			if got.Reachable != tc.want.Reachable || got.Error != tc.want.Error || got.Nodes.Len() != tc.want.Nodes.Len() || got.Peers.Len() != 0 ||
				!got.CredentialExpiry.Equal(tc.want.CredentialExpiry) {
				t.Errorf("snapshot = %+v, want %+v", got, tc.want)
			}
		})
	}
}
