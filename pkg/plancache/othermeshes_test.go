package plancache

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// tableMembers answers identities from a table: what the member caches
// verified is the input of a pure decision here.
type tableMembers struct {
	ids      map[string]map[string]string // by mesh name
	handlers []func(types.NamespacedName)
}

func (m *tableMembers) Snapshot(*meshv1alpha1.ClusterMesh) map[string]clusters.ClusterState {
	return nil
}
func (m *tableMembers) Identities(mesh *meshv1alpha1.ClusterMesh) map[string]string {
	return m.ids[mesh.Name]
}
func (m *tableMembers) AddChangeHandler(f func(types.NamespacedName)) {
	m.handlers = append(m.handlers, f)
}

func claimMesh(name string, created time.Time, entries ...meshv1alpha1.ClusterEntry) *meshv1alpha1.ClusterMesh {
	return &meshv1alpha1.ClusterMesh{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns-" + name, Name: name, UID: types.UID("uid-" + name), Generation: 1,
			CreationTimestamp: metav1.NewTime(created)},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: entries},
	}
}

func claimEntry(name, pod string) meshv1alpha1.ClusterEntry {
	return meshv1alpha1.ClusterEntry{Name: name, PodCIDRs: []string{pod}, WireguardCIDR: "10.200." + pod[3:5] + ".0/24"}
}

// followedSource is an otherMeshSource following meshes, told of each in
// order, with the meshes whose plans it invalidates collected.
func followedSource(t *testing.T, members *tableMembers, meshes ...*meshv1alpha1.ClusterMesh) (*otherMeshSource, *[]types.NamespacedName) {
	t.Helper()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, m := range meshes {
		if err := store.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	s := newOtherMeshSource(members)
	notified := &[]types.NamespacedName{}
	s.onChange(func(k types.NamespacedName) { *notified = append(*notified, k) })
	s.follow(store)
	for _, m := range meshes {
		s.meshChanged(m)
	}
	return s, notified
}

// TestOtherMeshSource: the earlier mesh's verified networks reach the
// later mesh's plan for the shared cluster, never the other way round; an
// unverified cluster claims nothing; an identity change invalidates the
// plans of the meshes sharing a cluster before or after it.
func TestOtherMeshSource(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	first := claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16"), claimEntry("nowhere", "10.13.0.0/16"))
	later := claimMesh("later", t0.Add(time.Minute), claimEntry("local", "10.21.0.0/16"), claimEntry("mine", "10.22.0.0/16"))
	members := &tableMembers{ids: map[string]map[string]string{
		"first": {"host": "H", "far": "F", "nowhere": ""},
		"later": {"local": "H", "mine": "M"},
	}}
	s, notified := followedSource(t, members, first, later)

	var in planner.Input
	if err := s.fill(later, &in); err != nil {
		t.Fatal(err)
	}
	var got []string
	for target, claims := range in.OtherMeshClaims {
		for _, c := range claims {
			got = append(got, target+": "+c.Prefix.String()+" same="+c.SameCluster)
		}
	}
	slices.Sort(got)
	want := []string{
		"local: 10.11.0.0/16 same=local", "local: 10.12.0.0/16 same=",
		"local: 10.200.11.0/24 same=local", "local: 10.200.12.0/24 same=",
	}
	if !slices.Equal(got, want) {
		t.Errorf("claims on the later mesh:\n%v\nwant\n%v", got, want)
	}
	var none planner.Input
	if err := s.fill(first, &none); err != nil {
		t.Fatal(err)
	}
	if len(none.OtherMeshClaims) != 0 {
		t.Errorf("the earlier mesh got claims of the later one: %v", none.OtherMeshClaims)
	}

	// A status write (same generation, same identities) tells nobody.
	*notified = nil
	s.meshChanged(first.DeepCopy())
	if len(*notified) != 0 {
		t.Errorf("a write that changed no claim invalidated %v", *notified)
	}
	// The later mesh's Secret now points elsewhere: no cluster in common,
	// and the earlier mesh hears of it.
	members.ids["later"] = map[string]string{"local": "H2", "mine": "M"}
	for _, f := range members.handlers {
		f(types.NamespacedName{Namespace: "ns-later", Name: "later"})
	}
	if !slices.Contains(*notified, types.NamespacedName{Namespace: "ns-first", Name: "first"}) {
		t.Errorf("the earlier mesh's plan was not invalidated by the identity change: %v", *notified)
	}
	var after planner.Input
	if err := s.fill(later, &after); err != nil {
		t.Fatal(err)
	}
	if len(after.OtherMeshClaims) != 0 {
		t.Errorf("claims without a cluster in common: %v", after.OtherMeshClaims)
	}
	// Created at the same second: the lower UID comes first.
	same := later.DeepCopy()
	same.CreationTimestamp = first.CreationTimestamp
	if !validation.Precedes(first, same) || validation.Precedes(same, first) {
		t.Error("the UID does not break a tie of creation times")
	}
}
