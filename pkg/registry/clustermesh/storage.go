package clustermesh

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// REST is the etcd-backed storage of ClusterMeshes.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.CategoriesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// ShortNames lets users type kubectl get cmesh.
func (*REST) ShortNames() []string { return []string{"cmesh"} }

// Categories lets kubectl get kilo list meshes beside Kilo's own resources.
func (*REST) Categories() []string { return []string{"kilo"} }

// StatusREST is the status subresource: the same objects, another strategy.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher             = &StatusREST{}
	_ rest.ResetFieldsStrategy = &StatusREST{}
	_ rest.Storage             = &StatusREST{}
)

// New returns an empty ClusterMesh.
func (r *StatusREST) New() runtime.Object { return &meshv1alpha1.ClusterMesh{} }

// Destroy is a no-op: the main store owns the storage.
func (r *StatusREST) Destroy() {}

// Get retrieves the mesh so that status can be read and patched.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes only the status of a mesh.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Status updates never create: the mesh must exist.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields tells server-side apply which fields this endpoint cannot change.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// NewREST builds the main and status storage of ClusterMeshes.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, *StatusREST, error) {
	s := newStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &meshv1alpha1.ClusterMesh{} },
		NewListFunc:               func() runtime.Object { return &meshv1alpha1.ClusterMeshList{} },
		PredicateFunc:             matchClusterMesh,
		DefaultQualifiedResource:  meshv1alpha1.Resource("clustermeshes"),
		SingularQualifiedResource: meshv1alpha1.Resource("clustermesh"),

		CreateStrategy:      s,
		UpdateStrategy:      s,
		DeleteStrategy:      s,
		ResetFieldsStrategy: s,

		TableConvertor: tableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: getAttrs}); err != nil {
		return nil, nil, fmt.Errorf("completing ClusterMesh storage: %w", err)
	}
	statusStore := *store
	ss := statusStrategy{s}
	statusStore.UpdateStrategy = ss
	statusStore.ResetFieldsStrategy = ss
	return &REST{Store: store}, &StatusREST{store: &statusStore}, nil
}
