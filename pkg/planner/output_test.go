package planner

import (
	"reflect"
	"slices"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestServedViewListsUnchanged checks that a plan keeps its unchanged
// names, its groups and its node decisions out of View (the last two in
// Plan.Groups and Plan.Nodes), and that the served view lists them in a
// copy of its own.
func TestServedViewListsUnchanged(t *testing.T) {
	p := mustCompute(t, applied(t))
	v := p.ServedView()
	for i, tp := range p.View.Targets {
		want := []string{}
		for _, peer := range p.DesiredPeers[tp.Cluster].All() {
			want = append(want, peer.Name)
		}
		if len(tp.Unchanged) > 0 {
			t.Errorf("%s: View lists %v unchanged, want none", tp.Cluster, tp.Unchanged)
		}
		if got := v.Targets[i].Unchanged; len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: served view lists %v unchanged, want %v", tp.Cluster, got, want)
		}
	}
	groups := 0
	for i, c := range p.View.Clusters {
		var want []meshv1alpha1.GroupPlan
		for _, g := range p.Groups[c.Name].All() {
			want = append(want, *g)
		}
		groups += len(want)
		if len(c.Groups) > 0 || !reflect.DeepEqual(v.Clusters[i].Groups, want) {
			t.Errorf("%s: View lists %d groups, the served view %v; want none and %v", c.Name, len(c.Groups), v.Clusters[i].Groups, want)
		}
	}
	if groups == 0 {
		t.Fatal("the fixtures plan no group: the test checks nothing of them")
	}
	for i, c := range p.View.Clusters {
		var want []meshv1alpha1.NodeDecision
		for _, d := range p.Nodes[c.Name].All() {
			want = append(want, *d)
		}
		if len(c.Nodes) > 0 || len(want) == 0 && c.Reachable || !reflect.DeepEqual(v.Clusters[i].Nodes, want) {
			t.Errorf("%s: View lists %d nodes, the served view %v; want none and %v", c.Name, len(c.Nodes), v.Clusters[i].Nodes, want)
		}
	}
	v.Targets[0].Create = append(v.Targets[0].Create, "changed")
	if slices.Contains(p.View.Targets[0].Create, "changed") {
		t.Error("the served view shares its lists with the plan")
	}
}
