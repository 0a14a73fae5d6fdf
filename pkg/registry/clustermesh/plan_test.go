package clustermesh

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

type fixedPlan struct{ plan *planner.Plan }

func (f fixedPlan) Plan(*meshv1alpha1.ClusterMesh) (*planner.Plan, error) { return f.plan, nil }

// A plan keeps its unchanged names out of View; the plan subresource
// serves them in each target whose diff it computed: the desired Peers it
// neither creates, updates nor keeps.
func TestPlanGetListsUnchanged(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	peers := func(names ...string) planner.PeerList {
		var out []*kilov1alpha1.Peer
		for _, n := range names {
			out = append(out, &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		return planner.PeerListOf(out...)
	}
	p := &planner.Plan{DesiredPeers: map[string]planner.PeerList{"eu": peers("p0", "p1", "p2", "p3", "p4"), "us": peers("p5")}}
	p.View.Targets = []meshv1alpha1.TargetPlan{{
		Cluster: "eu", DiffState: meshv1alpha1.DiffStateComputed, Create: []string{"p0"},
		Update: []meshv1alpha1.PeerUpdate{{Name: "p3", Fields: []string{"endpoint"}}}, Kept: []meshv1alpha1.KeptPeer{{Name: "p4"}},
	}, {Cluster: "us", DiffState: meshv1alpha1.DiffStateUnknown}}
	obj, err := (&PlanREST{meshes: meshGetter{mesh}, planner: fixedPlan{p}}).Get(context.Background(), "m", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := obj.(*meshv1alpha1.ClusterMeshPlan)
	if v.Name != "m" || v.Namespace != "ns" || len(v.Targets) != 2 {
		t.Fatalf("view %+v", v)
	}
	if got := v.Targets[0].Unchanged; !slices.Equal(got, []string{"p1", "p2"}) || !slices.Equal(v.Targets[0].Create, []string{"p0"}) {
		t.Errorf("eu: unchanged %v, create %v; want [p1 p2] and [p0]", got, v.Targets[0].Create)
	}
	if got := v.Targets[1].Unchanged; got != nil {
		t.Errorf("us: unchanged %v, want none", got)
	}
	if p.View.Targets[0].Unchanged != nil {
		t.Error("serving the plan wrote into it")
	}
}
