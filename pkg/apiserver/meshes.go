package apiserver

import (
	"context"
	"fmt"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
)

// storage is what an informer over the server's own storage needs.
type storage interface {
	rest.Lister
	rest.Watcher
}

// newMeshInformer watches every ClusterMesh through the in-process storage:
// the server reads its own objects without a loopback round trip, and every
// replica (not only the leader) keeps member-cluster caches for the views.
func newMeshInformer(store storage) cache.SharedIndexInformer {
	return newStorageInformer(store, &meshv1alpha1.ClusterMesh{}, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
}

// newStorageInformer watches every object of one of the server's own
// resources through the in-process storage.
func newStorageInformer(store storage, example runtime.Object, indexers cache.Indexers) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			internal, err := toInternalListOptions(opts)
			if err != nil {
				return nil, err
			}
			return store.List(allNamespaces(ctx), internal)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			internal, err := toInternalListOptions(opts)
			if err != nil {
				return nil, err
			}
			w, err := store.Watch(allNamespaces(ctx), internal)
			if err != nil {
				return nil, err
			}
			return clusters.FilterWatch(w, unwrapCached), nil
		},
	}
	return cache.NewSharedIndexInformer(lw, example, 0, indexers)
}

// unwrapCached hands the informer the object itself: the watch cache wraps
// every object it sends so that its serialisation can be shared between watchers.
func unwrapCached(e watch.Event) (watch.Event, bool) {
	if c, ok := e.Object.(runtime.CacheableObject); ok {
		e.Object = c.GetObject()
	}
	return e, true
}

func allNamespaces(ctx context.Context) context.Context {
	return genericapirequest.WithNamespace(ctx, metav1.NamespaceAll)
}

func toInternalListOptions(in metav1.ListOptions) (*metainternalversion.ListOptions, error) {
	out := &metainternalversion.ListOptions{}
	if err := metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&in, out, nil); err != nil {
		return nil, fmt.Errorf("converting list options: %w", err)
	}
	return out, nil
}
