package clustermesh

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

type meshGetter struct{ mesh *meshv1alpha1.ClusterMesh }

func (g meshGetter) Get(context.Context, string, *metav1.GetOptions) (runtime.Object, error) {
	return g.mesh, nil
}

type servicesResult struct {
	out *services.Output
	err error
}

func (r servicesResult) Services(*meshv1alpha1.ClusterMesh) (*services.Output, error) {
	return r.out, r.err
}

// TestServicesGet: the view of the planner's output, of one cluster if
// asked, and the planner's refusals as errors a user can act on.
func TestServicesGet(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "m"},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{{Name: "a"}, {Name: "b"}}}}
	out := &services.Output{
		Clusters: []services.ClusterOutput{{Name: "a", Reachable: true, Imports: []services.Import{{Namespace: "shop", Name: "cart", Sources: []string{"b"}, Endpoints: 2}}}, {Name: "b"}},
		Exports:  []services.ExportResult{{Cluster: "b", Namespace: "shop", Name: "cart", Valid: "Valid", Endpoints: 2}},
	}
	for _, tc := range []struct {
		name     string
		planner  servicesResult
		cluster  string
		clusters []string
		exports  int
		wantErr  func(error) bool
		message  string
	}{
		{name: "whole mesh", planner: servicesResult{out: out}, clusters: []string{"a", "b"}, exports: 1},
		{name: "one cluster", planner: servicesResult{out: out}, cluster: "a", clusters: []string{"a"}},
		{name: "not a member", planner: servicesResult{out: out}, cluster: "z", wantErr: apierrors.IsBadRequest, message: `cluster "z" is not a member of clustermesh m`},
		{name: "services disabled", planner: servicesResult{err: fmt.Errorf("mesh tenant/m: %w", ErrServicesDisabled)},
			wantErr: apierrors.IsBadRequest, message: "clustermesh tenant/m does not carry services: its spec.multiClusterServices is not Enabled"},
		{name: "other errors", planner: servicesResult{err: fmt.Errorf("boom")},
			wantErr: func(err error) bool { return !apierrors.IsBadRequest(err) }, message: "computing the services of tenant/m: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &ServicesREST{meshes: meshGetter{mesh}, planner: tc.planner}
			obj, err := r.Get(context.Background(), "m", &meshv1alpha1.ClusterMeshServicesOptions{Cluster: tc.cluster})
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) || !strings.Contains(err.Error(), tc.message) {
					t.Fatalf("want an error with %q, got %v", tc.message, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v := obj.(*meshv1alpha1.ClusterMeshServices)
			var clusters []string
			for _, c := range v.Clusters {
				clusters = append(clusters, c.Cluster)
			}
			if v.Name != "m" || v.Namespace != "tenant" || strings.Join(clusters, ",") != strings.Join(tc.clusters, ",") || len(v.Exports) != tc.exports {
				t.Errorf("view %+v: want clusters %v and %d exports", v, tc.clusters, tc.exports)
			}
		})
	}
}
