// Package clustermeshgrant stores ClusterMeshGrant objects in etcd through
// the generic registry. Grants are cluster-scoped and written only by
// whoever RBAC allows; the server reads them from its own storage.
package clustermeshgrant

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// REST is the etcd-backed storage of ClusterMeshGrants.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// ShortNames lets admins type kubectl get cmgrant.
func (*REST) ShortNames() []string { return []string{"cmgrant"} }

// NewREST builds the storage of ClusterMeshGrants. They are not in the
// "kilo" category: tenants may not list them, and kubectl get kilo would
// fail for them on a resource they cannot see.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	s := strategy{ObjectTyper: scheme}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &meshv1alpha1.ClusterMeshGrant{} },
		NewListFunc:               func() runtime.Object { return &meshv1alpha1.ClusterMeshGrantList{} },
		PredicateFunc:             matchGrant,
		DefaultQualifiedResource:  meshv1alpha1.Resource("clustermeshgrants"),
		SingularQualifiedResource: meshv1alpha1.Resource("clustermeshgrant"),

		CreateStrategy: s,
		UpdateStrategy: s,
		DeleteStrategy: s,

		TableConvertor: tableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: getAttrs}); err != nil {
		return nil, fmt.Errorf("completing ClusterMeshGrant storage: %w", err)
	}
	return &REST{Store: store}, nil
}
