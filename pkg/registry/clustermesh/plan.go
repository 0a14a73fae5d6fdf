package clustermesh

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// Planner computes the plan of a mesh from what the member-cluster caches
// hold now. The reconciler applies plans from the same source, so a view is
// exactly what would be applied.
type Planner interface {
	Plan(mesh *meshv1alpha1.ClusterMesh) (*planner.Plan, error)
}

// PlanREST serves clustermeshes/NAME/plan.
type PlanREST struct {
	meshes  rest.Getter
	planner Planner
}

var (
	_ rest.Getter  = &PlanREST{}
	_ rest.Storage = &PlanREST{}
)

// NewPlanREST serves the plans of the meshes in store.
func NewPlanREST(store *REST, p Planner) *PlanREST {
	return &PlanREST{meshes: store, planner: p}
}

// New returns an empty plan.
func (r *PlanREST) New() runtime.Object { return &meshv1alpha1.ClusterMeshPlan{} }

// Destroy is a no-op: the view owns no storage.
func (r *PlanREST) Destroy() {}

// Get computes the plan of mesh name. Looking the mesh up through the store
// gives namespaces and NotFound the semantics of the main resource.
func (r *PlanREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	mesh, err := getMesh(ctx, r.meshes, name, "")
	if err != nil {
		return nil, err
	}
	p, err := r.planner.Plan(mesh)
	if err != nil {
		return nil, fmt.Errorf("planning %s/%s: %w", mesh.Namespace, mesh.Name, err)
	}
	view := p.ServedView()
	view.Name, view.Namespace = mesh.Name, mesh.Namespace
	return view, nil
}
