// Package clustermesh stores ClusterMesh objects in etcd through the generic
// registry and serves the computed views beside them.
package clustermesh

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
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/strategies"
)

// strategy governs writes to the main resource: spec changes bump the
// generation, and status written here is discarded.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	strategies.Common
}

var (
	_ rest.RESTCreateStrategy       = strategy{}
	_ rest.RESTUpdateStrategy       = strategy{}
	_ rest.RESTDeleteStrategy       = strategy{}
	_ rest.ResetFieldsStrategy      = strategy{}
	_ rest.RESTCreateUpdateStrategy = strategy{}
)

func newStrategy(typer runtime.ObjectTyper) strategy {
	return strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

func (strategy) NamespaceScoped() bool { return true }

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(meshv1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	m := obj.(*meshv1alpha1.ClusterMesh)
	m.Status = meshv1alpha1.ClusterMeshStatus{}
	m.Generation = 1
	meshv1alpha1.SetDefaults(m)
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	m := obj.(*meshv1alpha1.ClusterMesh)
	prev := old.(*meshv1alpha1.ClusterMesh)
	m.Status = prev.Status
	meshv1alpha1.SetDefaults(m)
	strategies.KeepGeneration(m, prev, m.Spec, prev.Spec)
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateClusterMesh(obj.(*meshv1alpha1.ClusterMesh))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterMeshUpdate(obj.(*meshv1alpha1.ClusterMesh), old.(*meshv1alpha1.ClusterMesh))
}

// statusStrategy governs the status subresource: only status changes, and
// the generation never moves.
type statusStrategy struct {
	strategy
}

var _ rest.RESTUpdateStrategy = statusStrategy{}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(meshv1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "labels"),
			fieldpath.MakePathOrDie("metadata", "annotations"),
		),
	}
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	m := obj.(*meshv1alpha1.ClusterMesh)
	prev := old.(*meshv1alpha1.ClusterMesh)
	m.Spec = prev.Spec
	m.Labels = prev.Labels
	m.Annotations = prev.Annotations
	m.Generation = prev.Generation
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterMeshStatusUpdate(obj.(*meshv1alpha1.ClusterMesh), old.(*meshv1alpha1.ClusterMesh))
}

// getAttrs exposes labels and metadata fields to list and watch selectors.
func getAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, ok := obj.(*meshv1alpha1.ClusterMesh)
	if !ok {
		return nil, nil, fmt.Errorf("not a ClusterMesh: %T", obj)
	}
	return m.Labels, generic.ObjectMetaFieldsSet(&m.ObjectMeta, true), nil
}

func matchClusterMesh(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: getAttrs}
}
