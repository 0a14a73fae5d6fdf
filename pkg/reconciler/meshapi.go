package reconciler

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

const meshResource = "clustermeshes"

// meshAPI writes the reconciler's parts of a ClusterMesh through the
// server's own API.
type meshAPI struct {
	client rest.Interface
}

// statusApply is the apply configuration of a mesh's status: only what the
// reconciler owns, so that applying it takes no other field.
type statusApply struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        applyMeta                      `json:"metadata"`
	Status          meshv1alpha1.ClusterMeshStatus `json:"status"`
}

type applyMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// UID makes the write fail on a mesh recreated under the same name.
	UID types.UID `json:"uid"`
}

// applyStatus server-side-applies status as the whole status the
// reconciler owns: conditions and clusters it no longer reports go away.
func (a meshAPI) applyStatus(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, status meshv1alpha1.ClusterMeshStatus) error {
	body, err := json.Marshal(statusApply{
		TypeMeta: metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMesh"},
		Metadata: applyMeta{Name: mesh.Name, Namespace: mesh.Namespace, UID: mesh.UID},
		Status:   status,
	})
	if err != nil {
		return fmt.Errorf("encoding the status of %s/%s: %w", mesh.Namespace, mesh.Name, err)
	}
	force := true
	err = a.client.Patch(types.ApplyPatchType).
		Namespace(mesh.Namespace).Resource(meshResource).Name(mesh.Name).SubResource("status").
		VersionedParams(&metav1.PatchOptions{FieldManager: FieldManager, Force: &force}, metav1.ParameterCodec).
		Body(body).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("writing the status of %s/%s: %w", mesh.Namespace, mesh.Name, err)
	}
	return nil
}

// setFinalizers replaces the mesh's finalizers, provided the mesh is still
// at the resourceVersion they were computed from: a merge patch replaces the
// whole list, and someone else's finalizer added meanwhile must not be lost.
func (a meshAPI) setFinalizers(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, finalizers []string) (*meshv1alpha1.ClusterMesh, error) {
	if finalizers == nil {
		finalizers = []string{}
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": mesh.ResourceVersion,
		"uid":             mesh.UID,
		"finalizers":      finalizers,
	}})
	if err != nil {
		return nil, err
	}
	out := &meshv1alpha1.ClusterMesh{}
	err = a.client.Patch(types.MergePatchType).
		Namespace(mesh.Namespace).Resource(meshResource).Name(mesh.Name).
		VersionedParams(&metav1.PatchOptions{FieldManager: FieldManager}, metav1.ParameterCodec).
		Body(body).Do(ctx).Into(out)
	if err != nil {
		return nil, fmt.Errorf("setting the finalizers of %s/%s: %w", mesh.Namespace, mesh.Name, err)
	}
	return out, nil
}

// get reads a mesh from storage through the server's own API, not a cache.
func (a meshAPI) get(ctx context.Context, namespace, name string) (*meshv1alpha1.ClusterMesh, error) {
	out := &meshv1alpha1.ClusterMesh{}
	err := a.client.Get().Namespace(namespace).Resource(meshResource).Name(name).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}
