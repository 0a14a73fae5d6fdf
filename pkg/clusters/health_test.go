package clusters

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

func TestHealthTransitions(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	changes := 0
	h := newHealth(clk, func() { changes++ })
	yes, no := true, false
	down := newError(memberaccess.ErrUnreachable, "", "connection refused")

	if v := h.view(); v.probed || v.reachable || v.problem == nil || v.problem.Reason != memberaccess.ErrPending {
		t.Fatalf("before the first probe: %+v", v)
	}

	clk.SetTime(time.Unix(1010, 0))
	if crd, transition := h.finishProbe(h.startProbe(), nil, &yes, nil); !crd || !transition || changes != 1 {
		t.Fatalf("first probe: crd %v transition %v changes %d", crd, transition, changes)
	}
	if v := h.view(); !v.reachable || !v.since.Equal(time.Unix(1010, 0)) || v.problem != nil || !v.crdKnown || !v.peerCRD {
		t.Fatalf("after a good probe: %+v", v)
	}
	if _, transition := h.finishProbe(h.startProbe(), nil, &yes, nil); transition || changes != 1 {
		t.Fatalf("an identical probe is a change: transition %v changes %d", transition, changes)
	}

	clk.SetTime(time.Unix(1020, 0))
	h.streamFailed(resourceNodes, newError(memberaccess.ErrForbidden, "", "nodes is forbidden"))
	if _, transition := h.finishProbe(h.startProbe(), down, nil, nil); !transition {
		t.Fatal("losing the cluster is no transition")
	}
	v := h.view()
	if v.reachable || !v.since.Equal(time.Unix(1020, 0)) || v.problem.Reason != memberaccess.ErrUnreachable || !v.peerCRD {
		t.Fatalf("unreachable: %+v (the CRD must be remembered)", v)
	}

	h.finishProbe(h.startProbe(), nil, nil, nil)
	if v := h.view(); !v.reachable || v.problem == nil || v.problem.Reason != memberaccess.ErrForbidden {
		t.Fatalf("reachable with a failing informer: %+v", v)
	}
	h.streamOK(resourceNodes)
	if v := h.view(); v.problem != nil {
		t.Fatalf("after the informer recovered: %+v", v)
	}

	// The CRD goes away: a late failure of the stopped Peer informer is not a problem.
	h.streamFailed(resourcePeers, newError(memberaccess.ErrListWatch, "", "not found"))
	h.finishProbe(h.startProbe(), nil, &no, nil)
	h.streamFailed(resourcePeers, newError(memberaccess.ErrListWatch, "", "not found"))
	if v := h.view(); v.peerCRD || v.problem != nil {
		t.Fatalf("without the CRD: %+v", v)
	}
}

func TestHealthCRDUnknown(t *testing.T) {
	h := newHealth(clocktesting.NewFakePassiveClock(time.Now()), func() {})
	forbidden := newError(memberaccess.ErrForbidden, "", "discovery forbidden")
	h.finishProbe(h.startProbe(), nil, nil, forbidden)
	if v := h.view(); v.crdKnown || v.problem != forbidden {
		t.Fatalf("CRD presence unknown: %+v", v)
	}
	yes := true
	h.finishProbe(h.startProbe(), nil, &yes, nil)
	// Once known, a failing discovery keeps the last answer and is no problem.
	h.finishProbe(h.startProbe(), nil, nil, forbidden)
	if v := h.view(); !v.peerCRD || v.problem != nil {
		t.Fatalf("CRD known, discovery failing: %+v", v)
	}
}

func TestAwaitRecovery(t *testing.T) {
	h := newHealth(clocktesting.NewFakePassiveClock(time.Now()), func() {})
	down := newError(memberaccess.ErrUnreachable, "", "connection refused")
	// A probe is running when the call fails: its answer is too old to count.
	inFlight := h.startProbe()

	done := make(chan error, 1)
	go func() { done <- h.awaitRecovery(context.Background()) }()
	select {
	case <-h.kick:
	case <-time.After(5 * time.Second):
		t.Fatal("awaitRecovery asked for no probe")
	}
	h.finishProbe(inFlight, nil, nil, nil)
	select {
	case err := <-done:
		t.Fatalf("returned (%v) on a probe started before the call", err)
	case <-time.After(50 * time.Millisecond):
	}
	h.finishProbe(h.startProbe(), down, nil, nil)
	select {
	case err := <-done:
		t.Fatalf("returned (%v) while unreachable", err)
	case <-time.After(50 * time.Millisecond):
	}
	h.finishProbe(h.startProbe(), nil, nil, nil)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not released by a good probe")
	}

	ctx, cancel := context.WithCancel(context.Background())
	h.finishProbe(h.startProbe(), down, nil, nil)
	go func() { done <- h.awaitRecovery(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("no error when the context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not released by the context")
	}
}

// TestSlowProbe: a probe that ran out of time leaves a reachable cluster
// reachable when its watches delivered an event while the probe ran, at
// most maxSlowProbes times in a row; any other failure, or a timeout
// without such an event, makes it unreachable at once.
func TestSlowProbe(t *testing.T) {
	type step struct {
		outcome string // "ok", "refused" or "timeout"
		event   bool   // a watch delivered an event while the probe ran
		want    bool   // reachable after the probe
	}
	ok := step{outcome: "ok", want: true}
	for _, c := range []struct {
		name        string
		eventBefore bool // an event delivered before the steps' first probe started
		steps       []step
	}{
		{"timeout with an event stays reachable", false, []step{ok, {"timeout", true, true}}},
		{"timeout without an event is unreachable", true, []step{ok, {"timeout", false, false}}},
		{"refused with an event is unreachable", false, []step{ok, {"refused", true, false}}},
		{"the first probe is never slow", false, []step{{"timeout", true, false}}},
		{"an unreachable cluster stays unreachable", false, []step{ok, {"refused", false, false}, {"timeout", true, false}, ok}},
		{"at most two in a row", false, []step{ok, {"timeout", true, true}, {"timeout", true, true}, {"timeout", true, false}}},
		{"an answered probe ends the row", false, []step{ok, {"timeout", true, true}, {"timeout", true, true}, ok, {"timeout", true, true}, {"timeout", true, true}}},
		{"a failed probe ends the row", false, []step{ok, {"timeout", true, true}, {"timeout", false, false}, ok, {"timeout", true, true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
			changes := 0
			h := newHealth(clk, func() { changes++ })
			if c.eventBefore {
				h.heard()
			}
			down := newError(memberaccess.ErrUnreachable, "", "connection refused")
			timeout := newError(memberaccess.ErrUnreachable, "", "context deadline exceeded")
			slowInARow := 0
			for i, s := range c.steps {
				clk.SetTime(clk.Now().Add(5 * time.Second))
				before, changesBefore := h.view(), changes
				run := h.startProbe()
				if s.event {
					h.heard()
				}
				// As cluster.probe does with checkReady's outcome.
				var probeErr *memberaccess.Error
				switch s.outcome {
				case "refused":
					probeErr = down
				case "timeout":
					probeErr = timeout
				}
				slow := false
				if s.outcome == "timeout" {
					var inARow int
					if inARow, slow = h.slowProbe(run); slow {
						slowInARow++
						if inARow != slowInARow {
							t.Errorf("step %d: %d slow probes in a row, want %d", i, inARow, slowInARow)
						}
					}
				}
				if !slow {
					slowInARow = 0
					h.finishProbe(run, probeErr, nil, nil)
				}
				v := h.view()
				if v.reachable != s.want {
					t.Fatalf("step %d (%s, event %v): reachable %v, want %v (problem %v)", i, s.outcome, s.event, v.reachable, s.want, v.problem)
				}
				if !v.probed {
					t.Errorf("step %d: the probe was not recorded as completed", i)
				}
				if slow && (changes != changesBefore || !v.since.Equal(before.since) || v.problem != nil) {
					t.Errorf("step %d: a slow probe changed what is seen: %d changes, since %v -> %v, problem %v", i, changes-changesBefore, before.since, v.since, v.problem)
				}
				if !s.want && (v.problem == nil || v.problem.Reason != memberaccess.ErrUnreachable) {
					t.Errorf("step %d: unreachable with problem %v", i, v.problem)
				}
			}
		})
	}
}

// TestSlowProbeReleasesWaiters: a slow probe completes the probe a failed
// list or watch call waits for, as an answered one does.
func TestSlowProbeReleasesWaiters(t *testing.T) {
	h := newHealth(clocktesting.NewFakePassiveClock(time.Now()), func() {})
	h.finishProbe(h.startProbe(), nil, nil, nil)
	done := make(chan error, 1)
	go func() { done <- h.awaitRecovery(context.Background()) }()
	select {
	case <-h.kick:
	case <-time.After(5 * time.Second):
		t.Fatal("awaitRecovery asked for no probe")
	}
	run := h.startProbe()
	h.heard()
	if _, slow := h.slowProbe(run); !slow {
		t.Fatal("not slow")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not released by a slow probe")
	}
}
