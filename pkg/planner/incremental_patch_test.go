package planner

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestDecide edits a few decisions of a cluster (chunk by chunk) and many
// (one new list): both give the list built at once, and leave the last
// plan's as it was.
func TestDecide(t *testing.T) {
	const n = 600
	s := &source{name: "c", nodes: make([]nodeInfo, n)}
	decisions := make([]meshv1alpha1.NodeDecision, n)
	for i := range decisions {
		s.nodes[i].name = fmt.Sprintf("node-%04d", i)
		decisions[i] = meshv1alpha1.NodeDecision{Node: s.nodes[i].name}
	}
	every := make([]int, n)
	for i := range every {
		every[i] = i
	}
	for _, idx := range [][]int{{3}, {0, n - 1}, every} {
		t.Run(fmt.Sprint(len(idx)), func(t *testing.T) {
			last := NodeListOf(slices.Clone(decisions)...)
			u := &patch{plan: &Plan{Nodes: map[string]NodeList{"c": last}}}
			u.decide(s, idx, func(i int, d *meshv1alpha1.NodeDecision) { d.Message = "edited " + s.nodes[i].name })
			want := slices.Clone(decisions)
			for _, i := range idx {
				want[i].Message = "edited " + s.nodes[i].name
			}
			if got := u.plan.Nodes["c"]; !reflect.DeepEqual(got, NodeListOf(want...)) {
				t.Errorf("the edited list differs from the list built at once")
			}
			if !reflect.DeepEqual(last, NodeListOf(decisions...)) {
				t.Errorf("the last plan's list changed")
			}
		})
	}
}
