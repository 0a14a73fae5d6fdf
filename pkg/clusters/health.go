package clusters

import (
	"context"
	"sync"
	"sync/atomic"
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
	// events counts the object events the cluster's watches delivered,
	// evidence that the server is alive between probes; an atomic, as
	// members send hundreds a second.
	events atomic.Uint64

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
	// slowProbes is how many probes in a row ran out of time while the
	// watches delivered events (see slowProbe).
	slowProbes int
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

// probeRun is one probe: its number, and the events the watches had
// delivered when it started.
type probeRun struct {
	seq    uint64
	events uint64
}

func (h *health) startProbe() probeRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.started++
	return probeRun{seq: h.started, events: h.events.Load()}
}

// heard counts an object event a watch of the cluster delivered.
func (h *health) heard() {
	h.events.Add(1)
}

// maxSlowProbes is how many probes in a row may run out of time or find
// the server busy without the cluster becoming unreachable, as long as its
// watches deliver events meanwhile: enough for an overloaded member
// answering /readyz late or failing its etcd check now
// and then, few enough that its Peer CRD and identity, which only a probe
// that was answered checks, are never more than three probe intervals
// older than they would otherwise be.
const maxSlowProbes = 2

// slowProbe records run, a probe that ran out of time without an answer
// or was answered busy (429, 5xx), as slow rather than failed when the cluster was reachable, its watches
// delivered an event while the probe ran, and fewer than maxSlowProbes
// probes before it in a row were slow: nothing visible changes. It returns
// how many probes in a row were slow, and false (recording nothing) when
// the probe must be finished as failed.
func (h *health) slowProbe(run probeRun) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.completed == 0 || !h.reachable || h.events.Load() == run.events || h.slowProbes >= maxSlowProbes {
		return h.slowProbes, false
	}
	h.slowProbes++
	h.completeLocked(run.seq)
	return h.slowProbes, true
}

// completeLocked marks probe seq complete and wakes its waiters.
func (h *health) completeLocked(seq uint64) {
	h.completed = seq
	close(h.probeDone)
	h.probeDone = make(chan struct{})
}

// finishProbe records the outcome of probe run: probeErr nil means
// reachable; crd nil means the Peer CRD's presence could not be told (for
// crdErr; the last known presence is kept). It returns whether the Peer CRD
// is known to be served, and whether this was the first probe or
// reachability changed.
func (h *health) finishProbe(run probeRun, probeErr *memberaccess.Error, crd *bool, crdErr *memberaccess.Error) (peerCRD, transition bool) {
	h.mu.Lock()
	h.slowProbes = 0
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
	h.completeLocked(run.seq)
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
