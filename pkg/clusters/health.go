package clusters

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
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
	probeErr  *memberaccess.Error
	crdKnown  bool
	peerCRD   bool
	crdErr    *memberaccess.Error            // why the Peer CRD's presence is not known yet
	streamErr map[string]*memberaccess.Error // by resource: last list/watch failure not followed by a success
	// identity is the cluster's verified identity ("" unknown), read at
	// identityAt; identityErr says why it is unknown.
	identity    string
	identityAt  time.Time
	identityErr *memberaccess.Error
}

var _ observer = (*health)(nil)

func newHealth(c clock.PassiveClock, onChange func()) *health {
	return &health{
		clock:     c,
		onChange:  onChange,
		kick:      make(chan struct{}, 1),
		probeDone: make(chan struct{}),
		since:     c.Now(),
		streamErr: map[string]*memberaccess.Error{},
	}
}

// healthView is a copy of health's state.
type healthView struct {
	probed    bool
	reachable bool
	since     time.Time
	crdKnown  bool
	peerCRD   bool
	problem   *memberaccess.Error // why the cluster is not fully usable, nil if it is
	identity  string
}

func (h *health) view() healthView {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := healthView{probed: h.completed > 0, reachable: h.reachable, since: h.since, crdKnown: h.crdKnown, peerCRD: h.peerCRD, identity: h.identity}
	switch {
	case h.completed == 0:
		v.problem = newError(memberaccess.ErrPending, "", "waiting for the first probe of the cluster")
	case h.probeErr != nil:
		v.problem = h.probeErr
	case !h.crdKnown && h.crdErr != nil:
		v.problem = h.crdErr
	case h.identityErr != nil && h.identityErr.Reason == memberaccess.ErrIsLocalCluster:
		v.problem = h.identityErr
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
func (h *health) finishProbe(seq uint64, probeErr *memberaccess.Error, crd *bool, crdErr *memberaccess.Error) (peerCRD, transition bool) {
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

func (h *health) streamFailed(resource string, err *memberaccess.Error) {
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
