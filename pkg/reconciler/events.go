package reconciler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// Event reasons beyond the plan's conflict reasons and credential warnings,
// which events reuse.
const (
	EventNodesSkipped    = "NodesSkipped"
	EventPeersChanged    = "PeersChanged"
	EventPeerConflict    = "PeerConflict"
	EventApplyFailed     = "ApplyFailed"
	EventPeersLeftBehind = "PeersLeftBehind"
	EventPeersRemoved    = "PeersRemoved"
	maxEventExamples     = 5
	eventComponent       = "kilo-mesh-apiserver"
)

// meshEvent is one event a pass would emit.
type meshEvent struct {
	Type, Reason, Message string
}

// eventFilter remembers, per mesh, the events of its last pass, so that a
// condition that persists is announced once instead of on every pass (and
// steady state writes no events). The event gate (eventgate.go) bounds
// bursts on top of that.
type eventFilter struct {
	mu   sync.Mutex
	last map[types.NamespacedName]map[meshEvent]struct{}
}

func newEventFilter() *eventFilter {
	return &eventFilter{last: map[types.NamespacedName]map[meshEvent]struct{}{}}
}

// fresh returns the events of this pass that the previous pass did not
// have, and remembers this pass's set.
func (f *eventFilter) fresh(mesh types.NamespacedName, events []meshEvent) []meshEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.last[mesh]
	now := make(map[meshEvent]struct{}, len(events))
	var out []meshEvent
	for _, e := range events {
		if _, seen := now[e]; seen {
			continue
		}
		now[e] = struct{}{}
		if _, ok := prev[e]; !ok {
			out = append(out, e)
		}
	}
	f.last[mesh] = now
	return out
}

// forget drops what is remembered of a mesh that is gone.
func (f *eventFilter) forget(mesh types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.last, mesh)
}

// announce sends what a pass did, every time, and the facts it found that
// the previous pass did not have, the plan's among them.
func (r *Reconciler) announce(mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan, states map[string]clusters.ClusterState,
	actions, facts []meshEvent) {
	emit(r.recorder, mesh, actions)
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	emit(r.recorder, mesh, r.events.fresh(key, append(facts, passFacts(plan, states)...)))
}

// passFacts are the persistent facts of a pass's plan and member states
// worth an event; nil without a plan.
func passFacts(plan *planner.Plan, states map[string]clusters.ClusterState) []meshEvent {
	if plan == nil {
		return nil
	}
	out := planEvents(plan)
	out = append(out, grantedEvents(plan)...)
	out = append(out, servicesSharedEvents(plan)...)
	return append(out, limitEvents(states)...)
}

// planEvents are the persistent facts of a plan worth an event: nodes left
// out of the mesh (per cluster and reason), conflicts, and member
// credentials that expire soon. Messages name nodes, never node messages,
// which carry ages that change every second; credential warnings name the
// expiry, not a countdown, so each is announced once.
func planEvents(plan *planner.Plan) []meshEvent {
	var out []meshEvent
	for _, c := range plan.View.Clusters {
		byReason := map[string][]string{}
		for _, n := range plan.Nodes[c.Name].All() {
			if !n.Included {
				byReason[n.Reason] = append(byReason[n.Reason], n.Node)
			}
		}
		reasons := make([]string, 0, len(byReason))
		for r := range byReason {
			reasons = append(reasons, r)
		}
		slices.Sort(reasons)
		for _, r := range reasons {
			nodes := byReason[r]
			out = append(out, meshEvent{
				Type:   corev1.EventTypeWarning,
				Reason: EventNodesSkipped,
				Message: fmt.Sprintf("cluster %s: %d node(s) not advertised (%s): %s", c.Name, len(nodes), r,
					examples(nodes, maxEventExamples)),
			})
		}
	}
	for _, c := range plan.View.Conflicts {
		out = append(out, meshEvent{Type: corev1.EventTypeWarning, Reason: c.Reason, Message: issueText(c)})
	}
	expiring, expired := credentialWarnings(plan)
	for _, w := range append(expired, expiring...) {
		out = append(out, meshEvent{Type: corev1.EventTypeWarning, Reason: w.Reason, Message: issueText(w)})
	}
	return out
}

// limitEvents are the member clusters over a limit on what is cached of
// them (their own, or their namespace's share of the server's memory): they
// are not used until they shrink or the namespace's others do. The reason
// is the cluster's (such as NamespaceMemberBudgetExceeded).
func limitEvents(states map[string]clusters.ClusterState) []meshEvent {
	var out []meshEvent
	for _, name := range slices.Sorted(maps.Keys(states)) {
		if st := states[name]; clusters.OverLimit(st.Reason) {
			out = append(out, meshEvent{Type: corev1.EventTypeWarning, Reason: string(st.Reason),
				Message: fmt.Sprintf("cluster %s is not used: %s", name, st.LastError)})
		}
	}
	return out
}

// examples names the first n items (already sorted) and counts the rest.
func examples(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// emit sends events about mesh through the recorder.
func emit(rec record.EventRecorder, mesh *meshv1alpha1.ClusterMesh, events []meshEvent) {
	for _, e := range events {
		rec.Event(mesh, e.Type, e.Reason, e.Message)
	}
}

// grantedEvents announce what host access withholds. The filter of facts
// sends each once, when it changes; the message names the grace period's
// end, not the time left, so that it stays the same until something does.
func grantedEvents(plan *planner.Plan) []meshEvent {
	ha := plan.View.HostAccess
	if ha == nil || ha.Granted {
		return nil
	}
	return []meshEvent{{Type: corev1.EventTypeWarning, Reason: ha.Reason, Message: ha.Message}}
}

// servicesSharedEvents announce each shared cluster once, as a fact.
func servicesSharedEvents(plan *planner.Plan) []meshEvent {
	var out []meshEvent
	for _, w := range sharedWarnings(plan) {
		out = append(out, meshEvent{Type: corev1.EventTypeWarning, Reason: w.Reason, Message: issueText(w)})
	}
	return out
}
