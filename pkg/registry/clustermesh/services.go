package clustermesh

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// ServicesPlanner computes what the member clusters of a mesh import and how
// every ServiceExport fared, from what the member caches hold now. The
// reconciler writes from the same computation, so the view is what is written.
type ServicesPlanner interface {
	Services(mesh *meshv1alpha1.ClusterMesh) (*services.Output, error)
}

// ErrServicesDisabled is what a ServicesPlanner's error wraps for a mesh
// whose spec.multiClusterServices is not Enabled; the view answers it with
// a 400 that says so.
var ErrServicesDisabled = errors.New("multi-cluster services are not enabled")

// ServicesREST serves clustermeshes/NAME/services: every member cluster's
// ServiceImports and every ServiceExport's outcome; with ?cluster= those
// of one cluster. kubectl get prints it as one row per import and export.
type ServicesREST struct {
	meshes  rest.Getter
	planner ServicesPlanner
}

var (
	_ rest.GetterWithOptions = &ServicesREST{}
	_ rest.Storage           = &ServicesREST{}
	_ rest.TableConvertor    = &ServicesREST{}
)

// NewServicesREST serves the services of the meshes in store.
func NewServicesREST(store *REST, p ServicesPlanner) *ServicesREST {
	return &ServicesREST{meshes: store, planner: p}
}

// New returns an empty view.
func (r *ServicesREST) New() runtime.Object { return &meshv1alpha1.ClusterMeshServices{} }

// Destroy is a no-op: the view owns no storage.
func (r *ServicesREST) Destroy() {}

// NewGetOptions declares the query parameter cluster.
func (r *ServicesREST) NewGetOptions() (runtime.Object, bool, string) {
	return &meshv1alpha1.ClusterMeshServicesOptions{}, false, ""
}

// Get computes the services of mesh name, of one cluster if asked.
func (r *ServicesREST) Get(ctx context.Context, name string, options runtime.Object) (runtime.Object, error) {
	opts, ok := options.(*meshv1alpha1.ClusterMeshServicesOptions)
	if !ok {
		return nil, fmt.Errorf("unexpected options %T", options)
	}
	mesh, err := getMesh(ctx, r.meshes, name, opts.Cluster)
	if err != nil {
		return nil, err
	}
	out, err := r.planner.Services(mesh)
	if errors.Is(err, ErrServicesDisabled) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("clustermesh %s/%s does not carry services: its spec.multiClusterServices is not %s",
			mesh.Namespace, mesh.Name, meshv1alpha1.MultiClusterServicesEnabled))
	}
	if err != nil {
		return nil, fmt.Errorf("computing the services of %s/%s: %w", mesh.Namespace, mesh.Name, err)
	}
	view := services.View(mesh.Namespace, mesh.Name, time.Now(), out)
	if opts.Cluster != "" {
		onlyCluster(view, opts.Cluster)
	}
	return view, nil
}

// onlyCluster restricts a services view to what one cluster imports and
// the ServiceExports it holds.
func onlyCluster(v *meshv1alpha1.ClusterMeshServices, cluster string) {
	var clusters []meshv1alpha1.ClusterImports
	for _, c := range v.Clusters {
		if c.Cluster == cluster {
			clusters = append(clusters, c)
		}
	}
	var exports []meshv1alpha1.ExportState
	for _, e := range v.Exports {
		if e.Cluster == cluster {
			exports = append(exports, e)
		}
	}
	v.Clusters, v.Exports = clusters, exports
}
