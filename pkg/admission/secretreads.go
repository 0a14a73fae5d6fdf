package admission

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/lru"

	"golang.org/x/time/rate"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// Bounds on the Secrets admission reads from the local cluster: those no
// stored mesh references (the others come from the member caches' Secret
// watches). Every tenant may send requests naming 64 Secrets each, dry runs
// included, which store nothing and cost nothing but these reads.
const (
	// SecretClientQPS and SecretClientBurst are for the client of admission's
	// Secret reads, its own so that they wait behind no other request of
	// the server; its burst holds several namespaces' whole bursts, so that
	// one namespace's largest mesh leaves the others' reads no wait.
	SecretClientQPS   = 50
	SecretClientBurst = 4 * validation.MaxClusters
	// secretReadsPerSecond and secretReadBurst are one namespace's: the
	// Secrets of the largest mesh at once, then a pace no tenant's ordinary
	// writes reach, and a fifth of the client's, so that no namespace
	// delays the others' reads.
	secretReadsPerSecond = 10
	secretReadBurst      = validation.MaxClusters
	// secretReadsAtOnce bounds the reads in flight for all namespaces, and
	// secretReadWait how long one waits for its turn and its answer before
	// the request is told to come back.
	secretReadsAtOnce = 8
	secretReadWait    = 2 * time.Second
	// namespaceBudgets is how many namespaces' budgets are remembered;
	// one forgotten starts full again.
	namespaceBudgets = 4096
)

// secretReads bounds the Secret reads of admission per namespace and in
// all; a request over a bound is answered 429 with Retry-After, never held
// or failed with the client's own error.
type secretReads struct {
	mu          sync.Mutex
	byNamespace *lru.Cache // namespace -> *rate.Limiter
	slots       chan struct{}
}

func newSecretReads() *secretReads {
	return &secretReads{byNamespace: lru.New(namespaceBudgets), slots: make(chan struct{}, secretReadsAtOnce)}
}

// admit takes n reads from namespace's budget, or says when to retry.
func (r *secretReads) admit(namespace string, n int) error {
	r.mu.Lock()
	var l *rate.Limiter
	if v, ok := r.byNamespace.Get(namespace); ok {
		l = v.(*rate.Limiter)
	} else {
		l = rate.NewLimiter(secretReadsPerSecond, secretReadBurst)
		r.byNamespace.Add(namespace, l)
	}
	r.mu.Unlock()
	res := l.ReserveN(time.Now(), n)
	if !res.OK() {
		return tooManyReads(fmt.Sprintf("the mesh names %d Secrets, more than %d", n, secretReadBurst), time.Second)
	}
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return tooManyReads(fmt.Sprintf("the meshes written in namespace %q named more Secrets than admission reads of one namespace (%d a second)", namespace, secretReadsPerSecond), d)
	}
	return nil
}

// get reads one Secret once a read's turn comes within secretReadWait.
func (r *secretReads) get(ctx context.Context, client kubernetes.Interface, namespace, name string) (*corev1.Secret, error) {
	wait := time.NewTimer(secretReadWait)
	defer wait.Stop()
	select {
	case r.slots <- struct{}{}:
	case <-wait.C:
		return nil, tooManyReads("admission is reading as many Secrets as it may at once", time.Second)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.slots }()
	readCtx, cancel := context.WithTimeout(ctx, secretReadWait)
	defer cancel()
	secret, err := client.CoreV1().Secrets(namespace).Get(readCtx, name, metav1.GetOptions{})
	if _, answered := err.(apierrors.APIStatus); err != nil && !answered && ctx.Err() == nil {
		// Waiting for the client's turn or the answer took too long: the
		// client's own error says how, which is no business of the tenant.
		return nil, tooManyReads("reading a Secret took too long", time.Second)
	}
	return secret, err
}

// tooManyReads is a 429 with Retry-After of at least a second.
func tooManyReads(why string, after time.Duration) error {
	return apierrors.NewTooManyRequests(why+"; retry later", max(1, int(math.Ceil(after.Seconds()))))
}
