package clustermesh

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

type fixedPlan struct{ plan *planner.Plan }

func (f fixedPlan) Plan(*meshv1alpha1.ClusterMesh) (*planner.Plan, error) { return f.plan, nil }

// A plan keeps its unchanged names out of View (plans share them as
// chunked lists); the plan subresource serves them in each target.
func TestPlanGetListsUnchanged(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	p := &planner.Plan{Unchanged: map[string]planner.NameList{"eu": planner.NameListOf("p1", "p2")}}
	p.View.Targets = []meshv1alpha1.TargetPlan{{Cluster: "eu", Create: []string{"p0"}}, {Cluster: "us"}}
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
