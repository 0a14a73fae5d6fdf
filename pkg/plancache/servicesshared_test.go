package plancache

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// TestOtherServicesMeshes: two meshes with services Enabled that verified
// one cluster are told of each other, with which takes precedence; a mesh
// with services Disabled or a cluster not verified counts for nothing; the
// other mesh disabling services, leaving the cluster or going clears it,
// and tells the mesh's plan.
func TestOtherServicesMeshes(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	enabled := func(m *meshv1alpha1.ClusterMesh) *meshv1alpha1.ClusterMesh {
		m.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
		return m
	}
	shared := map[string]string{"host": "H", "far": "F"}
	tests := []struct {
		name string
		// theirs is the earlier mesh; ids are the later one's identities.
		theirs    *meshv1alpha1.ClusterMesh
		theirIDs  map[string]string
		laterIDs  map[string]string
		laterOff  bool
		wantLater map[string]planner.OtherServicesMesh
		wantFirst map[string]planner.OtherServicesMesh
		change    func(s *otherMeshSource, members *tableMembers, first *meshv1alpha1.ClusterMesh)
		wantAfter map[string]planner.OtherServicesMesh // of the later mesh, after change
	}{
		{
			name:   "both enabled on one verified cluster",
			theirs: enabled(claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16"))), theirIDs: shared,
			laterIDs:  map[string]string{"local": "H", "mine": "M"},
			wantLater: map[string]planner.OtherServicesMesh{"local": {Earlier: true}},
			wantFirst: map[string]planner.OtherServicesMesh{"host": {}},
		},
		{
			name:   "the earlier mesh has services Disabled",
			theirs: claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16")), theirIDs: shared,
			laterIDs:  map[string]string{"local": "H", "mine": "M"},
			wantFirst: map[string]planner.OtherServicesMesh{"host": {}},
		},
		{
			name:   "the later mesh has services Disabled",
			theirs: enabled(claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16"))), theirIDs: shared,
			laterIDs: map[string]string{"local": "H", "mine": "M"}, laterOff: true,
			wantLater: map[string]planner.OtherServicesMesh{"local": {Earlier: true}},
		},
		{
			name:   "the shared cluster is not verified by the earlier mesh",
			theirs: enabled(claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16"))), theirIDs: map[string]string{"host": "", "far": "F"},
			laterIDs: map[string]string{"local": "H", "mine": "M"},
		},
		{
			name:   "the earlier mesh disables services",
			theirs: enabled(claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16"))), theirIDs: shared,
			laterIDs:  map[string]string{"local": "H", "mine": "M"},
			wantLater: map[string]planner.OtherServicesMesh{"local": {Earlier: true}},
			wantFirst: map[string]planner.OtherServicesMesh{"host": {}},
			change: func(s *otherMeshSource, _ *tableMembers, first *meshv1alpha1.ClusterMesh) {
				off := first.DeepCopy()
				off.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesDisabled
				off.Generation++
				if err := s.meshes.Update(off); err != nil {
					t.Fatal(err)
				}
				s.meshChanged(off)
			},
		},
		{
			name:   "the earlier mesh removes the shared entry",
			theirs: enabled(claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16"))), theirIDs: shared,
			laterIDs:  map[string]string{"local": "H", "mine": "M"},
			wantLater: map[string]planner.OtherServicesMesh{"local": {Earlier: true}},
			wantFirst: map[string]planner.OtherServicesMesh{"host": {}},
			change: func(s *otherMeshSource, members *tableMembers, first *meshv1alpha1.ClusterMesh) {
				left := first.DeepCopy()
				left.Spec.Clusters = left.Spec.Clusters[1:]
				left.Generation++
				members.ids["first"] = map[string]string{"far": "F"}
				if err := s.meshes.Update(left); err != nil {
					t.Fatal(err)
				}
				s.meshChanged(left)
			},
		},
		{
			name:   "the earlier mesh's Secret now reaches another cluster",
			theirs: enabled(claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16"))), theirIDs: shared,
			laterIDs:  map[string]string{"local": "H", "mine": "M"},
			wantLater: map[string]planner.OtherServicesMesh{"local": {Earlier: true}},
			wantFirst: map[string]planner.OtherServicesMesh{"host": {}},
			change: func(s *otherMeshSource, members *tableMembers, first *meshv1alpha1.ClusterMesh) {
				members.ids["first"] = map[string]string{"host": "H2", "far": "F"}
				for _, f := range members.handlers {
					f(types.NamespacedName{Namespace: first.Namespace, Name: first.Name})
				}
			},
		},
		{
			name:   "the earlier mesh is deleted",
			theirs: enabled(claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16"))), theirIDs: shared,
			laterIDs:  map[string]string{"local": "H", "mine": "M"},
			wantLater: map[string]planner.OtherServicesMesh{"local": {Earlier: true}},
			wantFirst: map[string]planner.OtherServicesMesh{"host": {}},
			change: func(s *otherMeshSource, _ *tableMembers, first *meshv1alpha1.ClusterMesh) {
				if err := s.meshes.Delete(first); err != nil {
					t.Fatal(err)
				}
				s.meshGone(types.NamespacedName{Namespace: first.Namespace, Name: first.Name})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			later := enabled(claimMesh("later", t0.Add(time.Minute), claimEntry("local", "10.11.0.0/16"), claimEntry("mine", "10.22.0.0/16")))
			if tt.laterOff {
				later.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesDisabled
			}
			members := &tableMembers{ids: map[string]map[string]string{"first": tt.theirIDs, "later": tt.laterIDs}}
			s, notified := followedSource(t, members, tt.theirs, later)

			fill := func(m *meshv1alpha1.ClusterMesh) map[string]planner.OtherServicesMesh {
				var in planner.Input
				if err := s.fill(m, &in); err != nil {
					t.Fatal(err)
				}
				return in.OtherServicesMeshes
			}
			if got := fill(later); !reflect.DeepEqual(got, tt.wantLater) {
				t.Errorf("the later mesh is told %v, want %v", got, tt.wantLater)
			}
			if got := fill(tt.theirs); !reflect.DeepEqual(got, tt.wantFirst) {
				t.Errorf("the earlier mesh is told %v, want %v", got, tt.wantFirst)
			}
			if tt.change == nil {
				return
			}
			*notified = nil
			tt.change(s, members, tt.theirs)
			if !slices.Contains(*notified, types.NamespacedName{Namespace: later.Namespace, Name: later.Name}) {
				t.Errorf("the change did not invalidate the later mesh's plan: %v", *notified)
			}
			if got := fill(later); !reflect.DeepEqual(got, tt.wantAfter) {
				t.Errorf("after the change the later mesh is told %v, want %v", got, tt.wantAfter)
			}
		})
	}
}

// TestServicesYielded: the services computation of a mesh is told which
// of its clusters an earlier services mesh holds, as its plan is, and of
// no other, whichever mesh it is.
func TestServicesYielded(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	enabled := func(m *meshv1alpha1.ClusterMesh) *meshv1alpha1.ClusterMesh {
		m.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
		return m
	}
	first := enabled(claimMesh("first", t0, claimEntry("host", "10.11.0.0/16"), claimEntry("far", "10.12.0.0/16")))
	later := enabled(claimMesh("later", t0.Add(time.Minute), claimEntry("local", "10.21.0.0/16"), claimEntry("mine", "10.22.0.0/16")))
	members := &tableMembers{ids: map[string]map[string]string{"first": {"host": "H", "far": "F"}, "later": {"local": "H", "mine": "M"}}}
	c, err := New(Config{Members: members})
	if err != nil {
		t.Fatal(err)
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, m := range []*meshv1alpha1.ClusterMesh{first, later} {
		if err := store.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	c.others.follow(store)
	c.others.meshChanged(first)
	c.others.meshChanged(later)
	for _, tc := range []struct {
		mesh *meshv1alpha1.ClusterMesh
		want map[string]bool
	}{
		{later, map[string]bool{"local": true, "mine": false}},
		{first, map[string]bool{"host": false, "far": false}},
	} {
		t.Run(tc.mesh.Name, func(t *testing.T) {
			out, err := c.Services(tc.mesh)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, co := range out.Clusters {
				got[co.Name] = co.Yielded
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("yielded %v, want %v", got, tc.want)
			}
		})
	}
}
