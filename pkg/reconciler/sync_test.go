package reconciler

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// TestCachedOf: a pass reads, of the cache's Peers, exactly those its
// target creates, updates or deletes and the cache holds.
func TestCachedOf(t *testing.T) {
	var peers []*kilov1alpha1.Peer
	for i := range 100 {
		peers = append(peers, &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%03d", i)}})
	}
	for _, c := range []struct {
		name   string
		target meshv1alpha1.TargetPlan
		want   []string
	}{
		{"nothing to do", meshv1alpha1.TargetPlan{}, nil},
		{"an update", meshv1alpha1.TargetPlan{Update: []meshv1alpha1.PeerUpdate{{Name: "p042"}}}, []string{"p042"}},
		{"first and last", meshv1alpha1.TargetPlan{Update: []meshv1alpha1.PeerUpdate{{Name: "p000"}, {Name: "p099"}}}, []string{"p000", "p099"}},
		{"a create the cache does not hold yet", meshv1alpha1.TargetPlan{Create: []string{"p100", "a"}}, nil},
		{"a create the cache holds already", meshv1alpha1.TargetPlan{Create: []string{"p007"}}, []string{"p007"}},
		{"deletes, one gone", meshv1alpha1.TargetPlan{Delete: []string{"p010", "p0105"}}, []string{"p010"}},
		{"all three", meshv1alpha1.TargetPlan{Create: []string{"p001"}, Update: []meshv1alpha1.PeerUpdate{{Name: "p002"}}, Delete: []string{"p003"}},
			[]string{"p001", "p002", "p003"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := cachedOf(planner.PeerListOf(peers...), &c.target)
			if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, c.want) {
				t.Errorf("cachedOf = %v, want %v", names, c.want)
			}
			for name, p := range got {
				if p.Name != name {
					t.Errorf("%s maps to Peer %s", name, p.Name)
				}
			}
		})
	}
}

// TestMeasuredElsewhere: a cluster whose state was read through another
// connection than its plan was made on is named; one not connected in
// either is not.
func TestMeasuredElsewhere(t *testing.T) {
	plan := &planner.Plan{Measured: map[string]string{"east": "local", "west": "https://old#a", "north": ""}}
	for _, c := range []struct {
		name   string
		states map[string]clusters.ClusterState
		want   []string
	}{
		{"the same connections", map[string]clusters.ClusterState{
			"east": {Connection: "local"}, "west": {Connection: "https://old#a"}, "north": {}}, nil},
		{"west's Secret reaches another cluster", map[string]clusters.ClusterState{
			"east": {Connection: "local"}, "west": {Connection: "https://new#b"}, "north": {}}, []string{"west"}},
		{"west lost its connection, north got one", map[string]clusters.ClusterState{
			"east": {Connection: "local"}, "west": {}, "north": {Connection: "https://north#c"}}, []string{"north", "west"}},
		{"a cluster the plan does not know", map[string]clusters.ClusterState{
			"east": {Connection: "local"}, "west": {Connection: "https://old#a"}, "north": {}, "south": {Connection: "https://south#d"}}, []string{"south"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := measuredElsewhere(plan, c.states); !slices.Equal(got, c.want) {
				t.Errorf("measuredElsewhere = %v, want %v", got, c.want)
			}
		})
	}
}
