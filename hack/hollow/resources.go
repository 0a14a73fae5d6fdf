// Package hollow serves hollow member clusters: in one process, many
// in-memory API servers on loopback, each with its own port, CA and
// identity, serving exactly what kilo-mesh-apiserver uses on a member
// (see README.md). They are a measuring instrument for figures at scale,
// never a stand-in for a real kube-apiserver in a test of the product.
package hollow

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// scheme holds every type a hollow member serves, and codecs encode them as
// a kube-apiserver does (protobuf only for built-in types, as CRDs are
// served in JSON alone).
var (
	scheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		utilruntime.Must(corev1.AddToScheme(s))
		utilruntime.Must(discoveryv1.AddToScheme(s))
		utilruntime.Must(kilov1alpha1.AddToScheme(s))
		utilruntime.Must(mcsv1beta1.Install(s))
		metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
		return s
	}()
	codecs = serializer.NewCodecFactory(scheme)
)

// resource is one resource a hollow member serves.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	// status: the resource has a status subresource; an update of the
	// main resource keeps the stored status, an update of status keeps
	// everything else.
	status bool
	// createStatus: a create keeps the status it is given (Nodes,
	// Namespaces); other resources with a status start with none.
	createStatus bool
	// builtin types are served in protobuf too.
	builtin bool
	// generation: metadata.generation is set and moves with the spec, as
	// for custom resources.
	generation bool
	newObject  func() runtime.Object
	newList    func(metav1.ListMeta, []runtime.Object) runtime.Object
}

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

// resources are what the server reads and writes on a member: Nodes and
// Kilo Peers, the namespaces' names, and the multi-cluster services objects.
var resources = []*resource{
	{gvr: corev1.SchemeGroupVersion.WithResource("nodes"), kind: "Node", builtin: true, status: true, createStatus: true,
		newObject: func() runtime.Object { return &corev1.Node{} },
		newList: func(m metav1.ListMeta, items []runtime.Object) runtime.Object {
			return &corev1.NodeList{ListMeta: m, Items: values[corev1.Node](items)}
		}},
	{gvr: corev1.SchemeGroupVersion.WithResource("namespaces"), kind: "Namespace", builtin: true, status: true, createStatus: true,
		newObject: func() runtime.Object { return &corev1.Namespace{} },
		newList: func(m metav1.ListMeta, items []runtime.Object) runtime.Object {
			return &corev1.NamespaceList{ListMeta: m, Items: values[corev1.Namespace](items)}
		}},
	{gvr: corev1.SchemeGroupVersion.WithResource("services"), kind: "Service", builtin: true, namespaced: true, status: true,
		newObject: func() runtime.Object { return &corev1.Service{} },
		newList: func(m metav1.ListMeta, items []runtime.Object) runtime.Object {
			return &corev1.ServiceList{ListMeta: m, Items: values[corev1.Service](items)}
		}},
	{gvr: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), kind: "EndpointSlice", builtin: true, namespaced: true,
		newObject: func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		newList: func(m metav1.ListMeta, items []runtime.Object) runtime.Object {
			return &discoveryv1.EndpointSliceList{ListMeta: m, Items: values[discoveryv1.EndpointSlice](items)}
		}},
	{gvr: kilov1alpha1.PeerResource, kind: kilov1alpha1.PeerKind, generation: true,
		newObject: func() runtime.Object { return &kilov1alpha1.Peer{} },
		newList: func(m metav1.ListMeta, items []runtime.Object) runtime.Object {
			return &kilov1alpha1.PeerList{ListMeta: m, Items: values[kilov1alpha1.Peer](items)}
		}},
	{gvr: mcsv1beta1.SchemeGroupVersion.WithResource("serviceexports"), kind: "ServiceExport", namespaced: true, status: true, generation: true,
		newObject: func() runtime.Object { return &mcsv1beta1.ServiceExport{} },
		newList: func(m metav1.ListMeta, items []runtime.Object) runtime.Object {
			return &mcsv1beta1.ServiceExportList{ListMeta: m, Items: values[mcsv1beta1.ServiceExport](items)}
		}},
	{gvr: mcsv1beta1.SchemeGroupVersion.WithResource("serviceimports"), kind: "ServiceImport", namespaced: true, status: true, generation: true,
		newObject: func() runtime.Object { return &mcsv1beta1.ServiceImport{} },
		newList: func(m metav1.ListMeta, items []runtime.Object) runtime.Object {
			return &mcsv1beta1.ServiceImportList{ListMeta: m, Items: values[mcsv1beta1.ServiceImport](items)}
		}},
}

// The resources the package itself reads and writes.
var (
	nodes      = lookup("", "v1", "nodes")
	namespaces = lookup("", "v1", "namespaces")
	peers      = lookup(kilov1alpha1.GroupName, "v1alpha1", "peers")
)

// values copies the objects of a list's items out of their pointers.
func values[T any, PT interface {
	*T
	runtime.Object
}](items []runtime.Object) []T {
	out := make([]T, 0, len(items))
	for _, obj := range items {
		if p, ok := obj.(PT); ok {
			out = append(out, *p)
		}
	}
	return out
}

// lookup finds the resource of group, version and plural name.
func lookup(group, version, name string) *resource {
	for _, r := range resources {
		if r.gvr.Group == group && r.gvr.Version == version && r.gvr.Resource == name {
			return r
		}
	}
	return nil
}
