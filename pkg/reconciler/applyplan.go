package reconciler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// writePeers writes what plan changes on every member and sums it up;
// nothing without a plan.
func (r *Reconciler) writePeers(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan,
	members map[string]clusters.Member, trace *passTrace) peersWritten {
	if plan == nil {
		return peersWritten{outcomes: map[string]targetOutcome{}}
	}
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	return summarizeWrites(key, r.applyPlan(ctx, mesh, plan, members), trace)
}

// peersWritten is what a pass's Peer writes came to.
type peersWritten struct {
	outcomes map[string]targetOutcome
	// facts persist (conflicts, skipped nodes) and are announced when they
	// change; actions are what this pass did, announced every time.
	facts, actions []meshEvent
	errs           []string
	unseen         bool
}

// summarizeWrites sums up the pass's Peer writes, cluster by cluster.
func summarizeWrites(key types.NamespacedName, results map[string]targetResult, trace *passTrace) peersWritten {
	w := peersWritten{outcomes: make(map[string]targetOutcome, len(results))}
	for _, cluster := range slices.Sorted(maps.Keys(results)) {
		res := results[cluster]
		w.outcomes[cluster] = res.targetOutcome
		trace.wrote(res)
		w.unseen = w.unseen || res.unseen
		w.facts = append(w.facts, res.events...)
		if len(res.errors) > 0 {
			msg := fmt.Sprintf("cluster %s: %d failed: %s", cluster, len(res.errors), summarize(res.errors, 3))
			w.errs = append(w.errs, msg)
			w.actions = append(w.actions, meshEvent{Type: corev1.EventTypeWarning, Reason: EventApplyFailed, Message: msg})
		}
		if res.created+res.updated+res.deleted > 0 {
			w.actions = append(w.actions, meshEvent{Type: corev1.EventTypeNormal, Reason: EventPeersChanged,
				Message: fmt.Sprintf("cluster %s: created %d, updated %d, deleted %d Peers", cluster, res.created, res.updated, res.deleted)})
			klog.InfoS("Peers written", "mesh", key, "cluster", cluster, "created", res.created, "updated", res.updated, "deleted", res.deleted)
		}
	}
	return w
}

// applyPlan reconciles every reachable target at the same time: a slow or
// failing cluster does not hold up the others. Unreachable targets are left
// alone; the plan keeps what represents them elsewhere.
func (r *Reconciler) applyPlan(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan,
	members map[string]clusters.Member) map[string]targetResult {
	results := make(map[string]targetResult, len(plan.View.Targets))
	var works []targetWork
	for i := range plan.View.Targets {
		tp := &plan.View.Targets[i]
		if tp.DiffState != meshv1alpha1.DiffStateComputed {
			continue
		}
		mb, ok := members[tp.Cluster]
		if !usable(mb.State, ok) {
			// The cluster went away between planning and writing.
			continue
		}
		if len(tp.Create)+len(tp.Update)+len(tp.Delete) == 0 {
			results[tp.Cluster] = targetResult{targetOutcome: targetOutcome{reconciled: true, applied: tp.DesiredPeers}}
			continue
		}
		client, err := mb.Peers()
		if err != nil {
			results[tp.Cluster] = targetResult{targetOutcome: targetOutcome{reconciled: true, errors: []string{err.Error()}}}
			continue
		}
		works = append(works, targetWork{
			mesh:    mesh,
			cluster: tp.Cluster,
			target:  tp,
			desired: plan.DesiredPeers[tp.Cluster],
			cached:  cachedOf(mb.State.Peers, tp),
			client:  client,
			written: r.written,
			writer:  r.writer,
		})
	}
	applyTargets(ctx, works, results)
	return results
}

// applyTargets writes every target of works at the same time and adds
// their results to results, which only its goroutines touch meanwhile.
func applyTargets(ctx context.Context, works []targetWork, results map[string]targetResult) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, work := range works {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := applyTarget(ctx, work)
			mu.Lock()
			results[work.cluster] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// cachedOf is what a pass on target reads of its cached Peers (a
// ClusterState's, sorted by name): those it creates, updates or deletes.
// A map of every cached Peer, thousands on a large mesh, cost more than a
// single change's writes.
func cachedOf(peers planner.PeerList, target *meshv1alpha1.TargetPlan) map[string]*kilov1alpha1.Peer {
	m := make(map[string]*kilov1alpha1.Peer, len(target.Create)+len(target.Update)+len(target.Delete))
	find := func(name string) {
		if p, ok := planner.FindPeer(peers, name); ok {
			m[name] = p
		}
	}
	for _, n := range target.Create {
		find(n)
	}
	for _, u := range target.Update {
		find(u.Name)
	}
	for _, n := range target.Delete {
		find(n)
	}
	return m
}
