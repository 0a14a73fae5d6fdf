package plancache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// FollowMeshes drops the plans of deleted meshes and lets the other
// sources find the meshes of a namespace. The member connections follow
// the same informer through clusters.Manager.FollowMeshes, not through
// the cache. The server and the reconciler's tests both wire meshes to
// the cache with it.
func (c *Cache) FollowMeshes(meshes cache.SharedInformer) error {
	c.mu.Lock()
	c.meshes = meshes.GetStore()
	c.mu.Unlock()
	c.others.follow(meshes.GetStore())
	if _, err := meshes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.meshSeen,
		UpdateFunc: func(_, obj any) { c.meshSeen(obj) },
		DeleteFunc: c.release,
	}); err != nil {
		return fmt.Errorf("following ClusterMeshes: %w", err)
	}
	return nil
}

// meshSeen tells the other meshes' plans of a mesh added or changed.
func (c *Cache) meshSeen(obj any) {
	if mesh := asMesh(obj); mesh != nil {
		c.others.meshChanged(mesh)
	}
}

func (c *Cache) release(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if mesh := asMesh(obj); mesh != nil {
		key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
		c.others.meshGone(key)
		c.forget(key)
	}
}

func asMesh(obj any) *meshv1alpha1.ClusterMesh {
	mesh, ok := obj.(*meshv1alpha1.ClusterMesh)
	if !ok {
		klog.ErrorS(nil, "Unexpected object in the ClusterMesh informer", "type", fmt.Sprintf("%T", obj))
	}
	return mesh
}
