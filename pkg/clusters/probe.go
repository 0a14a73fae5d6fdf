package clusters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// Probe defaults. A probe is two small GETs (/readyz and the discovery
// document of kilo.squat.ai/v1alpha1); informer failures trigger one at once,
// the interval bounds how long a silently lost server (no reset, no error)
// goes unnoticed.
const (
	DefaultProbeInterval = 5 * time.Second
	DefaultProbeTimeout  = 3 * time.Second
	// minProbeSpacing keeps a burst of failing calls from becoming a burst
	// of probes.
	minProbeSpacing = 500 * time.Millisecond
)

// probeLoop probes the cluster every interval, and at once when asked to.
func (c *cluster) probeLoop(ctx context.Context) {
	ticker := time.NewTicker(c.opts.probeInterval)
	defer ticker.Stop()
	for {
		start := time.Now()
		c.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-c.health.kick:
			pauseSince(ctx, start, minProbeSpacing)
		}
	}
}

func (c *cluster) probe(ctx context.Context) {
	seq := c.health.startProbe()
	pctx, cancel := context.WithTimeout(ctx, c.opts.probeTimeout)
	defer cancel()
	probeErr := c.checkReady(pctx)
	var crd *bool
	var crdErr *Error
	if probeErr == nil {
		crd, crdErr = c.checkPeerCRD(pctx)
		c.verifyIdentity(pctx)
	}
	if ctx.Err() != nil {
		// Stopping: a cancelled probe says nothing about the cluster.
		return
	}
	peerCRD, transition := c.health.finishProbe(seq, probeErr, crd, crdErr)
	if transition {
		klog.FromContext(ctx).Info("Member cluster probed", "reachable", probeErr == nil, "peerCRD", peerCRD, "err", errorText(probeErr))
	}
	c.setPeerInformer(peerCRD)
	c.probeServices(ctx, probeErr == nil)
}

// checkReady asks /readyz. Forbidden and NotFound still prove a working
// server that knows the credentials; only transport failures, 401 and
// server errors make the cluster unreachable.
func (c *cluster) checkReady(ctx context.Context) *Error {
	var code int
	err := c.probeREST.Get().AbsPath("/readyz").MaxRetries(0).Do(ctx).StatusCode(&code).Error()
	var own *Error
	switch {
	case err == nil, code == http.StatusForbidden, code == http.StatusNotFound:
		return nil
	case code == http.StatusUnauthorized:
		return newError(ErrUnauthorized, "", "the cluster rejects the credentials (HTTP 401)")
	case code >= 300 && code < 400:
		return redirected(code)
	case code != 0:
		return newError(ErrUnreachable, "", fmt.Sprintf("the API server is not ready (HTTP %d on /readyz)", code))
	case errors.As(err, &own):
		// The dial policy refused the address: nothing was sent.
		return own
	default:
		return newError(ErrUnreachable, "", memberErrorText(err))
	}
}

// checkPeerCRD reads the discovery document of kilo.squat.ai/v1alpha1
// (served to every authenticated user), or says why it cannot tell.
func (c *cluster) checkPeerCRD(ctx context.Context) (*bool, *Error) {
	gv := kilov1alpha1.SchemeGroupVersion
	var list metav1.APIResourceList
	err := c.probeREST.Get().AbsPath("/apis", gv.Group, gv.Version).MaxRetries(0).Do(ctx).Into(&list)
	var present bool
	switch {
	case err == nil:
		present = slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool {
			return r.Name == kilov1alpha1.PeerResource.Resource
		})
	case apierrors.IsNotFound(err):
		present = false
	default:
		reason := ErrListWatch
		switch {
		case apierrors.IsForbidden(err):
			reason = ErrForbidden
		case redirectCode(err) != 0:
			return nil, redirected(redirectCode(err))
		}
		return nil, newError(reason, "", fmt.Sprintf("reading the discovery document of %s: %s", gv, memberErrorText(err)))
	}
	return &present, nil
}
