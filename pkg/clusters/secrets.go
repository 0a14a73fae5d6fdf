package clusters

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// secretWatch watches one kubeconfig Secret of the local cluster, selected
// by name, so the server holds only the Secrets meshes reference, never all
// Secrets of a namespace. Every binding naming the Secret shares it.
type secretWatch struct {
	key      types.NamespacedName
	informer cache.SharedIndexInformer
	onChange func(types.NamespacedName)

	// refs and cancel are guarded by Manager.mu.
	refs   int
	cancel context.CancelFunc

	mu  sync.Mutex
	err *memberaccess.Error // last list/watch failure not followed by a success
}

var _ observer = (*secretWatch)(nil)

func newSecretWatch(client kubernetes.Interface, key types.NamespacedName, onChange func(types.NamespacedName)) (*secretWatch, error) {
	sw := &secretWatch{key: key, onChange: onChange}
	secrets := client.CoreV1().Secrets(key.Namespace)
	selector := fields.OneTermEqualSelector("metadata.name", key.Name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return secrets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return secrets.Watch(ctx, o)
		},
	}
	sw.informer = cache.NewSharedIndexInformerWithOptions(newObservedListWatch(lw, "secrets", sw), &corev1.Secret{},
		cache.SharedIndexInformerOptions{ObjectDescription: "Secret " + key.String()})
	if err := sw.informer.SetTransform(transformSecret); err != nil {
		return nil, fmt.Errorf("Secret %s informer: %w", key, err)
	}
	notify := func(any) { sw.onChange(sw.key) }
	if _, err := sw.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, newObj any) { notify(newObj) },
		DeleteFunc: notify,
	}); err != nil {
		return nil, fmt.Errorf("Secret %s informer: %w", key, err)
	}
	return sw, nil
}

func (sw *secretWatch) start(parent context.Context, wg *sync.WaitGroup) {
	ctx, cancel := context.WithCancel(parent)
	sw.cancel = cancel
	wg.Go(func() { sw.informer.RunWithContext(ctx) })
	// A Secret that does not exist sends no event: say when the list is
	// complete, so that bindings learn it is missing.
	wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), sw.informer.HasSynced) {
			sw.onChange(sw.key)
		}
	})
}

// observed implements observer: failures are recorded, and the informer
// retries as usual (the Secrets live on the local cluster; without it
// nothing works anyway).
func (sw *secretWatch) observed(ctx context.Context, _ string, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var e *memberaccess.Error
	if err != nil {
		e = newError(memberaccess.ErrSecretUnreadable, sw.field(), fmt.Sprintf("reading the Secret: %v", err))
	}
	sw.mu.Lock()
	changed := !sameError(sw.err, e)
	sw.err = e
	sw.mu.Unlock()
	if changed {
		sw.onChange(sw.key)
	}
	return false
}

func (sw *secretWatch) field() string { return "Secret " + sw.key.String() }

// kubeconfig returns the data under dataKey, or why there is none.
func (sw *secretWatch) kubeconfig(dataKey string) ([]byte, *memberaccess.Error) {
	if !sw.informer.HasSynced() {
		sw.mu.Lock()
		e := sw.err
		sw.mu.Unlock()
		if e != nil {
			return nil, e
		}
		return nil, newError(memberaccess.ErrPending, sw.field(), "waiting for the Secret to be read")
	}
	obj, exists, err := sw.informer.GetStore().GetByKey(sw.key.String())
	if err != nil || !exists {
		return nil, newError(memberaccess.ErrSecretNotFound, sw.field(), "the Secret does not exist in the mesh's namespace")
	}
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, newError(memberaccess.ErrSecretNotFound, sw.field(), fmt.Sprintf("unexpected %T in the Secret cache", obj))
	}
	data, ok := secret.Data[dataKey]
	if !ok {
		// Key names are not secret; they help spot a typo.
		keys := slices.Sorted(maps.Keys(secret.Data))
		return nil, newError(memberaccess.ErrSecretKeyNotFound, sw.field(), fmt.Sprintf("the Secret has no key %q (it has: %s)", dataKey, strings.Join(keys, ", ")))
	}
	return data, nil
}
