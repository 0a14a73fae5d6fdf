package clustermeshgrant

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/strategies"
)

// strategy governs writes of grants: cluster-scoped, validated, and the
// generation moves with the spec, so that an admin can tell which version
// of a grant the meshes' Granted conditions describe.
type strategy struct {
	runtime.ObjectTyper
	strategies.Common
}

var (
	_ rest.RESTCreateStrategy = strategy{}
	_ rest.RESTUpdateStrategy = strategy{}
	_ rest.RESTDeleteStrategy = strategy{}
)

func (strategy) NamespaceScoped() bool { return false }

func (strategy) GenerateName(base string) string { return names.SimpleNameGenerator.GenerateName(base) }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*meshv1alpha1.ClusterMeshGrant).Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	g, prev := obj.(*meshv1alpha1.ClusterMeshGrant), old.(*meshv1alpha1.ClusterMeshGrant)
	strategies.KeepGeneration(g, prev, g.Spec, prev.Spec)
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateClusterMeshGrant(obj.(*meshv1alpha1.ClusterMeshGrant))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterMeshGrantUpdate(obj.(*meshv1alpha1.ClusterMeshGrant), old.(*meshv1alpha1.ClusterMeshGrant))
}

// getAttrs exposes labels and metadata fields to list and watch selectors.
func getAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	g, ok := obj.(*meshv1alpha1.ClusterMeshGrant)
	if !ok {
		return nil, nil, fmt.Errorf("not a ClusterMeshGrant: %T", obj)
	}
	return g.Labels, generic.ObjectMetaFieldsSet(&g.ObjectMeta, false), nil
}

func matchGrant(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: getAttrs}
}
