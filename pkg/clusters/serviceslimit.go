package clusters

import (
	"context"
	"fmt"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// lister is a typed client's List and Watch, as every generated client of
// one resource has them.
type lister[L runtime.Object] interface {
	List(ctx context.Context, o metav1.ListOptions) (L, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// servicesLimit reads one resource of the services caches through client:
// at most maxCount objects (0: no count limit), weighed in b, cut down by
// slim, and only those keep accepts (nil: all). selector is the label
// selector of every list and watch ("" for none).
func servicesLimit[T any, PT object[T], L runtime.Object](resource string, client lister[L], items func(L) (metav1.ListMeta, []T),
	newList func(metav1.ListMeta, []T) runtime.Object, slim func(PT) (PT, int64), selector string, keep func(PT) bool,
	maxCount int, tooMany func(seen int) *memberaccess.Error, b *budget, clk clock.PassiveClock) *objectLimit {
	return &objectLimit{
		resource: resource,
		maxCount: maxCount,
		tooMany:  tooMany,
		budget:   b,
		clock:    clk,
		listPage: func(ctx context.Context, o metav1.ListOptions) (metav1.ListMeta, []runtime.Object, error) {
			o.LabelSelector = selector
			list, err := client.List(ctx, o)
			if err != nil {
				return metav1.ListMeta{}, nil, err
			}
			m, all := items(list)
			objs := make([]runtime.Object, 0, len(all))
			for i := range all {
				if p := PT(&all[i]); keep == nil || keep(p) {
					objs = append(objs, p)
				}
			}
			return m, objs, nil
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			w, err := client.Watch(ctx, o)
			if err != nil || keep == nil {
				return w, err
			}
			// Names never change, so an object keep refuses is never one the
			// cache holds: its events are dropped whatever their type.
			return FilterWatch(w, func(e watch.Event) (watch.Event, bool) {
				p, ok := e.Object.(PT)
				return e, !ok || keep(p)
			}), nil
		},
		keep: keepAs(slim),
		newList: func(m metav1.ListMeta, objs []runtime.Object) runtime.Object {
			return newList(m, typedItems[T, PT](objs))
		},
	}
}

// tooManyExports is the error of a cluster with more ServiceExports than
// the server keeps of one member cluster.
func tooManyExports(maxExports int) func(int) *memberaccess.Error {
	return func(seen int) *memberaccess.Error {
		return newError(memberaccess.ErrTooManyServiceExports, "", fmt.Sprintf("the cluster has more than %d ServiceExports (the server's --max-service-exports-per-cluster, seen %d); "+
			"its services are not used, and what the mesh imported from it is kept as last known", maxExports, seen))
	}
}

func (s *servicesClients) namespaceLimit(b *budget, clk clock.PassiveClock) *objectLimit {
	return servicesLimit(resourceNamespaces, s.kube.CoreV1().Namespaces(),
		func(l *corev1.NamespaceList) (metav1.ListMeta, []corev1.Namespace) { return l.ListMeta, l.Items },
		func(m metav1.ListMeta, items []corev1.Namespace) runtime.Object {
			return &corev1.NamespaceList{ListMeta: m, Items: items}
		}, slimNamespace, "", nil, 0, nil, b, clk)
}

func (s *servicesClients) exportLimit(maxExports int, b *budget, clk clock.PassiveClock) *objectLimit {
	return servicesLimit(resourceServiceExports, s.mcs.MulticlusterV1beta1().ServiceExports(metav1.NamespaceAll),
		func(l *mcsv1beta1.ServiceExportList) (metav1.ListMeta, []mcsv1beta1.ServiceExport) {
			return l.ListMeta, l.Items
		},
		func(m metav1.ListMeta, items []mcsv1beta1.ServiceExport) runtime.Object {
			return &mcsv1beta1.ServiceExportList{ListMeta: m, Items: items}
		}, slimServiceExport, "", nil, maxExports, tooManyExports(maxExports), b, clk)
}

func (s *servicesClients) importLimit(b *budget, clk clock.PassiveClock) *objectLimit {
	return servicesLimit(resourceServiceImports, s.mcs.MulticlusterV1beta1().ServiceImports(metav1.NamespaceAll),
		func(l *mcsv1beta1.ServiceImportList) (metav1.ListMeta, []mcsv1beta1.ServiceImport) {
			return l.ListMeta, l.Items
		},
		func(m metav1.ListMeta, items []mcsv1beta1.ServiceImport) runtime.Object {
			return &mcsv1beta1.ServiceImportList{ListMeta: m, Items: items}
		}, slimServiceImport, "", nil, 0, nil, b, clk)
}

// serviceLimit reads the Services selector selects that keep accepts.
func (s *servicesClients) serviceLimit(resource, selector string, keep func(*corev1.Service) bool, b *budget, clk clock.PassiveClock) *objectLimit {
	return servicesLimit(resource, s.kube.CoreV1().Services(metav1.NamespaceAll),
		func(l *corev1.ServiceList) (metav1.ListMeta, []corev1.Service) { return l.ListMeta, l.Items },
		func(m metav1.ListMeta, items []corev1.Service) runtime.Object {
			return &corev1.ServiceList{ListMeta: m, Items: items}
		},
		slimService, selector, keep, 0, nil, b, clk)
}

// sliceLimit reads the EndpointSlices selector selects that keep accepts.
func (s *servicesClients) sliceLimit(resource, selector string, keep func(*discoveryv1.EndpointSlice) bool, b *budget, clk clock.PassiveClock) *objectLimit {
	return servicesLimit(resource, s.kube.DiscoveryV1().EndpointSlices(metav1.NamespaceAll),
		func(l *discoveryv1.EndpointSliceList) (metav1.ListMeta, []discoveryv1.EndpointSlice) {
			return l.ListMeta, l.Items
		},
		func(m metav1.ListMeta, items []discoveryv1.EndpointSlice) runtime.Object {
			return &discoveryv1.EndpointSliceList{ListMeta: m, Items: items}
		}, slimEndpointSlice, selector, keep, 0, nil, b, clk)
}
