package clusters

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// FollowMeshes keeps the member connections matched to the meshes the
// informer stores: Follow on every add and update, Forget on delete. It is
// the only caller of Follow and Forget, so that what keeps a connection
// open is a stored mesh or a hold (see holds.go).
func (m *Manager) FollowMeshes(meshes cache.SharedInformer) error {
	if _, err := meshes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.followObject,
		UpdateFunc: func(_, obj any) { m.followObject(obj) },
		DeleteFunc: m.forgetObject,
	}); err != nil {
		return fmt.Errorf("following ClusterMeshes for their member clusters: %w", err)
	}
	return nil
}

func (m *Manager) followObject(obj any) {
	if mesh := meshOf(obj); mesh != nil {
		m.Follow(mesh)
	}
}

func (m *Manager) forgetObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if mesh := meshOf(obj); mesh != nil {
		m.Forget(mesh)
	}
}

func meshOf(obj any) *meshv1alpha1.ClusterMesh {
	mesh, ok := obj.(*meshv1alpha1.ClusterMesh)
	if !ok {
		klog.ErrorS(nil, "Unexpected object in the ClusterMesh informer", "type", fmt.Sprintf("%T", obj))
	}
	return mesh
}
