package clustermesh

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// getMesh finds the mesh a view is asked about; a view of one cluster
// (cluster not empty) answers only for a member of the mesh.
func getMesh(ctx context.Context, meshes rest.Getter, name, cluster string) (*meshv1alpha1.ClusterMesh, error) {
	obj, err := meshes.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	mesh, ok := obj.(*meshv1alpha1.ClusterMesh)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	if cluster != "" && !isMember(mesh, cluster) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cluster %q is not a member of clustermesh %s", cluster, mesh.Name))
	}
	return mesh, nil
}

func isMember(mesh *meshv1alpha1.ClusterMesh, cluster string) bool {
	for _, c := range mesh.Spec.Clusters {
		if c.Name == cluster {
			return true
		}
	}
	return false
}
