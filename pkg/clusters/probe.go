package clusters

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

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

// health is what the probe and the informers of one member cluster have
// observed. It is the only place reachability is decided.
type health struct {
	clock    clock.PassiveClock
	onChange func()        // called without the lock when the visible state changed
	kick     chan struct{} // buffered: a probe is wanted now

	mu        sync.Mutex
	started   uint64        // probes started
	completed uint64        // number of the last completed probe; 0: none yet
	probeDone chan struct{} // closed and replaced when a probe completes
	reachable bool
	since     time.Time
	probeErr  *Error
	crdKnown  bool
	peerCRD   bool
	crdErr    *Error            // why the Peer CRD's presence is not known yet
	streamErr map[string]*Error // by resource: last list/watch failure not followed by a success
}

var _ observer = (*health)(nil)

func newHealth(c clock.PassiveClock, onChange func()) *health {
	return &health{
		clock:     c,
		onChange:  onChange,
		kick:      make(chan struct{}, 1),
		probeDone: make(chan struct{}),
		since:     c.Now(),
		streamErr: map[string]*Error{},
	}
}

// healthView is a copy of health's state.
type healthView struct {
	probed    bool
	reachable bool
	since     time.Time
	crdKnown  bool
	peerCRD   bool
	problem   *Error // why the cluster is not fully usable, nil if it is
}

func (h *health) view() healthView {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := healthView{probed: h.completed > 0, reachable: h.reachable, since: h.since, crdKnown: h.crdKnown, peerCRD: h.peerCRD}
	switch {
	case h.completed == 0:
		v.problem = newError(ErrPending, "", "waiting for the first probe of the cluster")
	case h.probeErr != nil:
		v.problem = h.probeErr
	case !h.crdKnown && h.crdErr != nil:
		v.problem = h.crdErr
	default:
		// Nodes first: without them a cluster is of no use.
		for _, r := range []string{resourceNodes, resourcePeers} {
			if e := h.streamErr[r]; e != nil {
				v.problem = e
				break
			}
		}
	}
	return v
}

func (h *health) requestProbe() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

func (h *health) startProbe() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.started++
	return h.started
}

// finishProbe records the outcome of probe number seq: probeErr nil means
// reachable; crd nil means the Peer CRD's presence could not be told (for
// crdErr; the last known presence is kept). It returns whether the Peer CRD
// is known to be served, and whether this was the first probe or
// reachability changed.
func (h *health) finishProbe(seq uint64, probeErr *Error, crd *bool, crdErr *Error) (peerCRD, transition bool) {
	h.mu.Lock()
	transition = h.completed == 0
	reachable := probeErr == nil
	if reachable != h.reachable {
		h.reachable = reachable
		h.since = h.clock.Now()
		transition = true
	}
	changed := transition
	if !sameError(h.probeErr, probeErr) {
		h.probeErr = probeErr
		changed = true
	}
	if crd != nil && (!h.crdKnown || h.peerCRD != *crd) {
		h.crdKnown, h.peerCRD = true, *crd
		changed = true
	}
	if !sameError(h.crdErr, crdErr) {
		h.crdErr = crdErr
		changed = changed || !h.crdKnown
	}
	if h.crdKnown && !h.peerCRD {
		// No Peer informer runs, so its last failure no longer applies.
		delete(h.streamErr, resourcePeers)
	}
	h.completed = seq
	close(h.probeDone)
	h.probeDone = make(chan struct{})
	peerCRD = h.peerCRD
	h.mu.Unlock()
	if changed {
		h.onChange()
	}
	return peerCRD, transition
}

// awaitRecovery asks for a probe and waits until a probe started after the
// call sees the cluster reachable, or ctx ends.
func (h *health) awaitRecovery(ctx context.Context) error {
	h.mu.Lock()
	after := h.started
	h.mu.Unlock()
	h.requestProbe()
	for {
		h.mu.Lock()
		ok := h.completed > after && h.reachable
		done := h.probeDone
		h.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
		}
	}
}

func (h *health) streamFailed(resource string, err *Error) {
	h.mu.Lock()
	if resource == resourcePeers && h.crdKnown && !h.peerCRD {
		// The last calls of a Peer informer being stopped because its CRD
		// is gone.
		h.mu.Unlock()
		return
	}
	changed := !sameError(h.streamErr[resource], err)
	h.streamErr[resource] = err
	h.mu.Unlock()
	if changed {
		h.onChange()
	}
}

func (h *health) streamOK(resource string) {
	h.mu.Lock()
	_, changed := h.streamErr[resource]
	delete(h.streamErr, resource)
	h.mu.Unlock()
	if changed {
		h.onChange()
	}
}

// observed implements observer: a failure for want of a connection makes
// the call wait for the probe to see the cluster back.
func (h *health) observed(ctx context.Context, resource string, err error) bool {
	if err == nil {
		h.streamOK(resource)
		return false
	}
	if ctx.Err() != nil {
		return false
	}
	h.streamFailed(resource, streamError(resource, err))
	if apierrors.IsNotFound(err) {
		// A resource that vanished: the Peer CRD was deleted; let the probe
		// confirm it now rather than at its next tick.
		h.requestProbe()
	}
	if !isConnectivityError(err) {
		return false
	}
	return h.awaitRecovery(ctx) == nil
}

func sameError(a, b *Error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

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
}

// checkReady asks /readyz. Forbidden and NotFound still prove a working
// server that knows the credentials; only transport failures, 401 and
// server errors make the cluster unreachable.
func (c *cluster) checkReady(ctx context.Context) *Error {
	var code int
	err := c.probeREST.Get().AbsPath("/readyz").MaxRetries(0).Do(ctx).StatusCode(&code).Error()
	switch {
	case err == nil, code == http.StatusForbidden, code == http.StatusNotFound:
		return nil
	case code == http.StatusUnauthorized:
		return newError(ErrUnauthorized, "", "the cluster rejects the credentials (HTTP 401)")
	case code != 0:
		return newError(ErrUnreachable, "", fmt.Sprintf("the API server is not ready (HTTP %d on /readyz)", code))
	default:
		return newError(ErrUnreachable, "", err.Error())
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
		if apierrors.IsForbidden(err) {
			reason = ErrForbidden
		}
		return nil, newError(reason, "", fmt.Sprintf("reading the discovery document of %s: %v", gv, err))
	}
	return &present, nil
}

func errorText(e *Error) string {
	if e == nil {
		return ""
	}
	return e.Error()
}
