package apiserver

import (
	"errors"
	"fmt"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plancache"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermesh"
)

type servicesAnswer struct {
	out *services.Output
	err error
}

func (a servicesAnswer) Services(*meshv1alpha1.ClusterMesh) (*services.Output, error) {
	return a.out, a.err
}

// TestServicesPlanner: the cache's refusal of a mesh without services
// reaches the view as the view's sentinel, with the cache's own words;
// anything else passes as it is.
func TestServicesPlanner(t *testing.T) {
	out := &services.Output{}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name         string
		answer       servicesAnswer
		wantOut      *services.Output
		wantErrs     []error
		wantDisabled bool
	}{
		{name: "an output", answer: servicesAnswer{out: out}, wantOut: out},
		{name: "disabled", answer: servicesAnswer{err: fmt.Errorf("ClusterMesh ns/m: %w", plancache.ErrServicesDisabled)},
			wantErrs: []error{plancache.ErrServicesDisabled}, wantDisabled: true},
		{name: "another error", answer: servicesAnswer{err: boom}, wantErrs: []error{boom}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := servicesPlanner{cache: tc.answer}.Services(&meshv1alpha1.ClusterMesh{})
			if got != tc.wantOut {
				t.Errorf("output %p, want %p", got, tc.wantOut)
			}
			if (err != nil) != (len(tc.wantErrs) > 0) || errors.Is(err, clustermesh.ErrServicesDisabled) != tc.wantDisabled {
				t.Errorf("error %v: want disabled %v", err, tc.wantDisabled)
			}
			for _, want := range tc.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not wrap %v", err, want)
				}
			}
		})
	}
}
