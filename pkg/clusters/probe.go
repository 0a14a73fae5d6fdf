package clusters

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
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
	run := c.health.startProbe()
	pctx, cancel := context.WithTimeout(ctx, c.opts.probeTimeout)
	defer cancel()
	probeErr, busy := c.checkReady(pctx)
	var crd *bool
	var crdErr *memberaccess.Error
	if probeErr == nil {
		crd, crdErr = c.checkPeerCRD(pctx)
		c.verifyIdentity(pctx)
	}
	if ctx.Err() != nil {
		// Stopping: a cancelled probe says nothing about the cluster.
		return
	}
	logger := klog.FromContext(ctx)
	if busy {
		if inARow, slow := c.health.slowProbe(run); slow {
			// Its watches deliver: an overloaded server, not a lost one.
			logger.V(2).Info("Member cluster probe slow", "inARow", inARow, "maxInARow", maxSlowProbes, "err", errorText(probeErr))
			return
		}
	}
	peerCRD, transition := c.health.finishProbe(run, probeErr, crd, crdErr)
	if transition {
		logger.Info("Member cluster probed", "reachable", probeErr == nil, "peerCRD", peerCRD, "err", errorText(probeErr))
	}
	c.setPeerInformer(peerCRD)
	c.probeServices(ctx, probeErr == nil)
}

// checkReady asks /readyz. Forbidden and NotFound still prove a working
// server that knows the credentials; only transport failures, 401 and
// server errors make the cluster unreachable. busy tells a failure an
// overloaded server gives (no answer in time, or /readyz answering 429 or
// 5xx, as when its etcd check runs out of time) from every other failure.
func (c *cluster) checkReady(ctx context.Context) (probeErr *memberaccess.Error, busy bool) {
	var code int
	err := c.probeREST.Get().AbsPath("/readyz").MaxRetries(0).Do(ctx).StatusCode(&code).Error()
	var own *memberaccess.Error
	switch {
	case err == nil, code == http.StatusForbidden, code == http.StatusNotFound:
		return nil, false
	case code == http.StatusUnauthorized:
		return newError(memberaccess.ErrUnauthorized, "", "the cluster rejects the credentials (HTTP 401)"), false
	case code >= 300 && code < 400:
		return memberaccess.Redirected(code), false
	case code != 0:
		return newError(memberaccess.ErrUnreachable, "", fmt.Sprintf("the API server is not ready (HTTP %d on /readyz)", code)), code == http.StatusTooManyRequests || code >= 500
	case errors.As(err, &own):
		// The dial policy refused the address: nothing was sent.
		return own, false
	default:
		// The context or the client's own timeout, whichever ran out first.
		var netErr net.Error
		return newError(memberaccess.ErrUnreachable, "", memberaccess.ErrorText(err)), errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
	}
}

// checkPeerCRD reads the discovery document of kilo.squat.ai/v1alpha1
// (served to every authenticated user), or says why it cannot tell.
func (c *cluster) checkPeerCRD(ctx context.Context) (*bool, *memberaccess.Error) {
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
		reason := memberaccess.ErrListWatch
		switch {
		case apierrors.IsForbidden(err):
			reason = memberaccess.ErrForbidden
		case memberaccess.RedirectCode(err) != 0:
			return nil, memberaccess.Redirected(memberaccess.RedirectCode(err))
		}
		return nil, newError(reason, "", fmt.Sprintf("reading the discovery document of %s: %s", gv, memberaccess.ErrorText(err)))
	}
	return &present, nil
}
