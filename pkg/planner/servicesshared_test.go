package planner

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestServicesShared: a cluster of a mesh with services Enabled that
// another services mesh verified too is a warning naming this mesh's entry;
// the clusters an earlier mesh shares are the ones the plan yields; the
// Peers are planned as before, and nothing is said while services are off.
func TestServicesShared(t *testing.T) {
	tests := []struct {
		name        string
		services    meshv1alpha1.MultiClusterServices
		others      map[string]OtherServicesMesh
		wantWarned  []string
		wantYielded []string
	}{
		{name: "no other services mesh", services: meshv1alpha1.MultiClusterServicesEnabled},
		{name: "services disabled here", services: meshv1alpha1.MultiClusterServicesDisabled,
			others: map[string]OtherServicesMesh{"us": {Earlier: true}}},
		{name: "shared with a later mesh", services: meshv1alpha1.MultiClusterServicesEnabled,
			others: map[string]OtherServicesMesh{"us": {}}, wantWarned: []string{"us"}},
		{name: "shared with an earlier mesh", services: meshv1alpha1.MultiClusterServicesEnabled,
			others: map[string]OtherServicesMesh{"us": {Earlier: true}}, wantWarned: []string{"us"}, wantYielded: []string{"us"}},
		{name: "two clusters, one yielded", services: meshv1alpha1.MultiClusterServicesEnabled,
			others:     map[string]OtherServicesMesh{"us": {}, "home": {Earlier: true}},
			wantWarned: []string{"home", "us"}, wantYielded: []string{"home"}},
		{name: "a cluster the mesh does not list", services: meshv1alpha1.MultiClusterServicesEnabled,
			others: map[string]OtherServicesMesh{"elsewhere": {Earlier: true}}},
	}
	base := mustCompute(t, testInput(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.Spec.MultiClusterServices = tt.services
			in.OtherServicesMeshes = tt.others
			p := mustCompute(t, in)
			var warned []string
			for _, w := range p.View.Warnings {
				if w.Reason != WarningServicesClusterShared {
					continue
				}
				warned = append(warned, w.Cluster)
				earlier := tt.others[w.Cluster].Earlier
				if !strings.Contains(w.Message, "a cluster belongs to at most one ClusterSet") ||
					strings.Contains(w.Message, "created earlier") != earlier || strings.Contains(w.Message, "created later") == earlier {
					t.Errorf("warning on %s (earlier %v): %s", w.Cluster, earlier, w.Message)
				}
			}
			if !slices.Equal(warned, tt.wantWarned) {
				t.Errorf("%s on %v, want %v", WarningServicesClusterShared, warned, tt.wantWarned)
			}
			if !slices.Equal(p.ServicesYielded, tt.wantYielded) {
				t.Errorf("ServicesYielded %v, want %v", p.ServicesYielded, tt.wantYielded)
			}
			if !reflect.DeepEqual(p.DesiredPeers, base.DesiredPeers) || !reflect.DeepEqual(p.View.Conflicts, base.View.Conflicts) {
				t.Error("sharing a cluster's services changed the Peers or conflicts")
			}
		})
	}
}

// TestServicesSharedIncremental: a change of the other services meshes
// plans the mesh whole, so a patched plan never keeps a stale warning.
func TestServicesSharedIncremental(t *testing.T) {
	in := testInput(t)
	in.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
	_, st, err := Start(in)
	if err != nil {
		t.Fatal(err)
	}
	next := in
	next.OtherServicesMeshes = map[string]OtherServicesMesh{"eu": {Earlier: true}}
	if ch := st.Diff(&next); !ch.Whole {
		t.Errorf("a new services mesh on eu is not a whole change: %+v", ch)
	}
}
