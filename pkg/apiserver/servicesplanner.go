package apiserver

import (
	"errors"
	"fmt"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plancache"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermesh"
)

var (
	_ clustermesh.ServicesPlanner = (*plancache.Cache)(nil)
	_ clustermesh.ServicesPlanner = servicesPlanner{}
)

// servicesPlanner is the plan cache as the services view reads it: the
// cache's refusal of a mesh without services also wraps the view's own
// sentinel, so that the registry needs nothing of the cache.
type servicesPlanner struct{ cache clustermesh.ServicesPlanner }

func (p servicesPlanner) Services(mesh *meshv1alpha1.ClusterMesh) (*services.Output, error) {
	out, err := p.cache.Services(mesh)
	if errors.Is(err, plancache.ErrServicesDisabled) {
		return nil, fmt.Errorf("%w: %w", clustermesh.ErrServicesDisabled, err)
	}
	return out, err
}
