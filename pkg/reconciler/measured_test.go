package reconciler

import (
	"slices"
	"testing"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

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
