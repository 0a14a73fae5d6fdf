package clusters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// retrySpacing is the least time between two list or watch attempts of one
// informer that failed for want of a connection.
const retrySpacing = time.Second

// observer learns the outcome of every list and watch call of an informer.
// It returns true to have a failed call tried again (it then has waited
// for a reason to believe it would succeed).
type observer interface {
	observed(ctx context.Context, resource string, err error) (retry bool)
}

// observedListWatch wraps the ListerWatcher of an informer. The reflector
// inside an informer retries failed calls with an exponential backoff of up
// to a minute, and tells nobody when a watch fails with "connection
// refused". Seeing each call lets the cluster know at once that it lost or
// regained the API server, and lets a call that failed for want of a
// connection wait for the probe to see the server back and then resume, so
// the caches are fresh again seconds after a restart instead of a minute.
type observedListWatch struct {
	inner    cache.ListerWatcherWithContext
	resource string
	obs      observer
}

var (
	_ cache.ListerWatcher            = (*observedListWatch)(nil)
	_ cache.ListerWatcherWithContext = (*observedListWatch)(nil)
)

// IsWatchListSemanticsUnSupported keeps the informers on list and watch:
// lists are paged and bounded here (objectLimit), where a streamed initial
// list would arrive as one unbounded watch.
func (lw *observedListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func newObservedListWatch(inner cache.ListerWatcherWithContext, resource string, obs observer) *observedListWatch {
	return &observedListWatch{inner: inner, resource: resource, obs: obs}
}

func (lw *observedListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	for {
		start := time.Now()
		obj, err := lw.inner.ListWithContext(ctx, opts)
		if !lw.obs.observed(ctx, lw.resource, err) {
			// The reflector logs what it gets: never a member's answer.
			return obj, memberaccess.Sanitize(err)
		}
		pauseSince(ctx, start, retrySpacing)
	}
}

func (lw *observedListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	for {
		start := time.Now()
		w, err := lw.inner.WatchWithContext(ctx, opts)
		if !lw.obs.observed(ctx, lw.resource, err) {
			return w, memberaccess.Sanitize(err)
		}
		pauseSince(ctx, start, retrySpacing)
	}
}

// List and Watch complete the ListerWatcher interface the informer
// constructor takes; informers call the context variants.
func (lw *observedListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *observedListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// pauseSince waits until d has passed since start, or ctx ends.
func pauseSince(ctx context.Context, start time.Time, d time.Duration) {
	wait := d - time.Since(start)
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// isConnectivityError reports whether err means the API server could not be
// talked to (as opposed to an answer refusing the request). A refusal of
// this server's own (a policy, a limit) is not: waiting for the cluster to
// answer would not change it.
func isConnectivityError(err error) bool {
	if errors.Is(err, memberaccess.ErrRefusedAddress) {
		return false
	}
	var own *memberaccess.Error
	if errors.As(err, &own) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		switch status.Status().Code {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return true
}

// streamError turns a list or watch failure into an *Error for the
// cluster's state.
func streamError(resource string, err error) *memberaccess.Error {
	var own *memberaccess.Error
	if errors.As(err, &own) {
		return own
	}
	reason := memberaccess.ErrListWatch
	switch {
	case errors.Is(err, memberaccess.ErrRefusedAddress):
		reason = memberaccess.ErrServerNotAllowed
	case memberaccess.RedirectCode(err) != 0:
		return memberaccess.Redirected(memberaccess.RedirectCode(err))
	case apierrors.IsUnauthorized(err):
		reason = memberaccess.ErrUnauthorized
	case apierrors.IsForbidden(err):
		reason = memberaccess.ErrForbidden
	case isConnectivityError(err):
		reason = memberaccess.ErrUnreachable
	}
	return newError(reason, "", fmt.Sprintf("listing or watching %s: %s", resource, memberaccess.ErrorText(err)))
}

// watchErrorHandler receives the errors that end an informer's list and
// watch cycle, including those of a watch stream after it started, which
// observedListWatch does not see.
func watchErrorHandler(resource string, h *health) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, _ *cache.Reflector, err error) {
		if errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || ctx.Err() != nil {
			// The ordinary end of a watch: the informer resumes or relists.
			return
		}
		klog.FromContext(ctx).V(2).Info("List or watch failed", "resource", resource, "err", memberaccess.ErrorText(err))
		h.streamFailed(resource, streamError(resource, err))
		if isConnectivityError(err) {
			h.requestProbe()
		}
	}
}
