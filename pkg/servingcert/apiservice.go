package servingcert

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// APIServiceGVR is the aggregation layer's registration resource. The
// typed client lives in k8s.io/kube-aggregator, a module the server would
// need for this one field only.
var APIServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// apiServices reads and writes the caBundle of one APIService, the one
// that points at the server's own Service.
type apiServices struct {
	client             dynamic.Interface
	name               string
	namespace, service string
}

// trusts returns whether the APIService trusts a CA. Without the
// APIService nobody needs to trust anything yet; when it cannot be read,
// nothing counts as trusted, so no working certificate is replaced.
func (a *apiServices) trusts(ctx context.Context) func(*x509.Certificate) bool {
	obj, err := a.client.Resource(APIServiceGVR).Get(ctx, a.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return func(*x509.Certificate) bool { return true }
	}
	if err != nil {
		klog.ErrorS(err, "Reading the APIService's caBundle", "apiService", a.name)
		return func(*x509.Certificate) bool { return false }
	}
	bundle, err := caBundle(obj)
	if err != nil {
		return func(*x509.Certificate) bool { return false }
	}
	certs := parseBundle(bundle)
	return func(c *x509.Certificate) bool { return containsCert(certs, c) }
}

// setBundle makes the APIService's caBundle bundle. It reports whether
// it changed anything. A missing APIService is not an error: it gets the
// bundle once it exists (its creation is watched).
func (a *apiServices) setBundle(ctx context.Context, bundle []byte) (bool, error) {
	res := a.client.Resource(APIServiceGVR)
	obj, err := res.Get(ctx, a.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		klog.V(2).InfoS("APIService not found; its caBundle is set once it exists", "apiService", a.name)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading APIService %s: %w", a.name, err)
	}
	ns, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "namespace")
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "name")
	if ns != a.namespace || name != a.service {
		return false, fmt.Errorf("APIService %s points at Service %q in namespace %q, not at %s/%s: its caBundle is left alone",
			a.name, name, ns, a.namespace, a.service)
	}
	current, err := caBundle(obj)
	if err == nil && bytes.Equal(current, bundle) {
		return false, nil
	}
	if err := unstructured.SetNestedField(obj.Object, base64.StdEncoding.EncodeToString(bundle), "spec", "caBundle"); err != nil {
		return false, err
	}
	if _, err := res.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "kilo-mesh-apiserver"}); err != nil {
		return false, fmt.Errorf("updating the caBundle of APIService %s: %w", a.name, err)
	}
	klog.InfoS("Updated the APIService's caBundle", "apiService", a.name, "cas", len(parseBundle(bundle)))
	return true, nil
}

func caBundle(obj *unstructured.Unstructured) ([]byte, error) {
	s, _, err := unstructured.NestedString(obj.Object, "spec", "caBundle")
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(s)
}

// watch calls changed on every change of the APIService until ctx ends.
func (a *apiServices) watch(ctx context.Context, changed func()) {
	informer := dynamicinformer.NewFilteredDynamicInformer(a.client, APIServiceGVR, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", a.name).String()
		})
	runInformer(ctx, informer.Informer(), changed)
}

// watchSecret enqueues a sync on every change of the Secret, e.g. a
// certificate another replica wrote.
func (c *Controller) watchSecret(ctx context.Context) {
	lw := cache.NewListWatchFromClient(c.kube.CoreV1().RESTClient(), "secrets", c.opts.Namespace,
		fields.OneTermEqualSelector("metadata.name", c.opts.SecretName))
	runInformer(ctx, cache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, cache.Indexers{}), c.enqueue)
}

func runInformer(ctx context.Context, informer cache.SharedIndexInformer, changed func()) {
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		UpdateFunc: func(any, any) { changed() },
		DeleteFunc: func(any) { changed() },
	})
	informer.RunWithContext(ctx)
}
