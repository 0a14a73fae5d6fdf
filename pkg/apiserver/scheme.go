package apiserver

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

var (
	// Scheme knows the mesh types under their only version and under the
	// internal version the generic server converts through.
	Scheme = runtime.NewScheme()
	// Codecs serialises the types of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	utilruntime.Must(meshv1alpha1.AddToScheme(Scheme))
	registerAsInternal(Scheme, meshv1alpha1.SchemeGroupVersion)
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	Scheme.AddUnversionedTypes(schema.GroupVersion{Group: "", Version: "v1"},
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}

// registerAsInternal registers the group's own types a second time as its
// internal version. With one served version the same Go types sit on both
// sides of every conversion, so none has to be written or generated.
func registerAsInternal(scheme *runtime.Scheme, gv schema.GroupVersion) {
	internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
	pkg := reflect.TypeOf(meshv1alpha1.ClusterMesh{}).PkgPath()
	for kind, t := range scheme.KnownTypes(gv) {
		if t.PkgPath() != pkg {
			continue // metav1 option types shared by every group
		}
		scheme.AddKnownTypeWithName(internal.WithKind(kind), reflect.New(t).Interface().(runtime.Object))
	}
}
