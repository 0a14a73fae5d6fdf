package reconciler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// cacheRecheck is when a mesh is looked at again after a pass that found
// writes of its own the member caches had not shown yet.
const cacheRecheck = time.Second

// settleRecheck is when a mesh whose member caches have not settled is
// looked at again if no change of theirs came first.
const settleRecheck = 5 * time.Second

// syncResult says when to look at a mesh again without a change.
type syncResult struct {
	requeueAfter time.Duration
}

// sync reconciles one mesh, and removes the Peers of a deleted one of the
// same key: it is the only place that writes.
func (r *Reconciler) sync(ctx context.Context, key types.NamespacedName, trace *passTrace) (syncResult, error) {
	var departed syncResult
	if d := r.departures.get(key); d != nil {
		var err error
		if departed, err = r.removeDeparted(ctx, key, d); err != nil {
			return departed, err
		}
	}
	res, err := r.syncMesh(ctx, key, trace)
	res.requeueAfter = sooner(res.requeueAfter, departed.requeueAfter)
	return res, err
}

// syncMesh reconciles the stored mesh of key.
func (r *Reconciler) syncMesh(ctx context.Context, key types.NamespacedName, trace *passTrace) (syncResult, error) {
	obj, exists, err := r.meshes.GetIndexer().GetByKey(key.String())
	if err != nil {
		return syncResult{}, fmt.Errorf("reading ClusterMesh %s from the cache: %w", key, err)
	}
	if !exists {
		r.forget(key)
		return syncResult{}, nil
	}
	mesh := obj.(*meshv1alpha1.ClusterMesh)
	if !r.clusters.Settled(mesh) {
		// Its member clusters' caches are still filling (after a start or
		// a new Secret): what they would say is not known yet, and a status
		// written now would only say so. Their sync requeues the mesh; a
		// member that never answers its lists settles as failed once they
		// time out.
		return syncResult{requeueAfter: settleRecheck}, nil
	}
	if mesh.DeletionTimestamp != nil {
		return r.finalize(ctx, mesh)
	}
	if !hasFinalizer(mesh) {
		updated, err := r.meshAPI.setFinalizers(ctx, mesh, append(slices.Clone(mesh.Finalizers), Finalizer))
		if err != nil {
			return syncResult{}, err
		}
		mesh = updated
	}

	r.series.keep(key.String(), clusterNames(mesh))
	now := time.Now()
	m, ok := r.planMeasured(mesh)
	trace.planned = time.Now()
	if !ok {
		return syncResult{requeueAfter: cacheRecheck}, nil
	}
	plan, planErr, states := m.plan, m.err, m.states
	results := map[string]targetResult{}
	if plan != nil {
		results = r.applyPlan(ctx, mesh, plan, states)
	}

	outcomes := make(map[string]targetOutcome, len(results))
	// Facts that persist (conflicts, skipped nodes) are announced when they
	// change; what this pass did is announced every time.
	var facts, actions []meshEvent
	var writeErrs []string
	unseen := false
	for _, cluster := range slices.Sorted(maps.Keys(results)) {
		res := results[cluster]
		outcomes[cluster] = res.targetOutcome
		trace.wrote(res)
		unseen = unseen || res.unseen
		facts = append(facts, res.events...)
		if len(res.errors) > 0 {
			msg := fmt.Sprintf("cluster %s: %d failed: %s", cluster, len(res.errors), summarize(res.errors, 3))
			writeErrs = append(writeErrs, msg)
			actions = append(actions, meshEvent{Type: corev1.EventTypeWarning, Reason: EventApplyFailed, Message: msg})
		}
		if res.created+res.updated+res.deleted > 0 {
			actions = append(actions, meshEvent{Type: corev1.EventTypeNormal, Reason: EventPeersChanged,
				Message: fmt.Sprintf("cluster %s: created %d, updated %d, deleted %d Peers", cluster, res.created, res.updated, res.deleted)})
			klog.InfoS("Peers written", "mesh", key, "cluster", cluster, "created", res.created, "updated", res.updated, "deleted", res.deleted)
		}
	}
	svcRes := r.syncServices(ctx, mesh, states)
	unseen = unseen || svcRes.unseen
	actions = append(actions, svcRes.events...)
	facts = append(facts, svcRes.facts...)
	if plan != nil {
		facts = append(facts, planEvents(plan)...)
		facts = append(facts, grantedEvents(plan)...)
		facts = append(facts, servicesSharedEvents(plan)...)
		facts = append(facts, limitEvents(states)...)
	}
	r.report(mesh, plan, outcomes)
	reportCredentials(mesh, states)
	// Recorded in the same write as observedGeneration: a client that
	// waits for the generation sees the departures it caused.
	departures := r.settleDepartures(ctx, mesh, plan, states, now)
	facts = append(facts, departures.events...)

	status := buildStatus(statusInput{mesh: mesh, plan: plan, planErr: planErr, outcomes: outcomes, departed: departures.items,
		servicesRemoving: svcRes.removing, now: metav1.NewTime(now)})
	reportConditions(key.String(), status.Conditions)
	if statusChanged(&mesh.Status, &status) {
		if err := r.meshAPI.applyStatus(ctx, mesh, status); err != nil {
			return syncResult{}, err
		}
	}
	emit(r.recorder, mesh, actions)
	emit(r.recorder, mesh, r.events.fresh(key, facts))

	switch {
	case planErr != nil:
		return syncResult{}, planErr
	case len(writeErrs) > 0:
		return syncResult{}, fmt.Errorf("writing Peers of %s: %s", key, strings.Join(writeErrs, "; "))
	case svcRes.err(key) != nil:
		return syncResult{}, svcRes.err(key)
	}
	next := sooner(sooner(untilCheckInExpiry(plan, now), untilGraceEnds(plan, now)), departures.next)
	if unseen {
		// Writes of an earlier pass the member caches have not shown yet:
		// their events requeue the mesh, this is the safety net.
		next = sooner(next, cacheRecheck)
	}
	return syncResult{requeueAfter: next}, nil
}

// applyPlan reconciles every reachable target at the same time: a slow or
// failing cluster does not hold up the others. Unreachable targets are left
// alone; the plan keeps what represents them elsewhere.
func (r *Reconciler) applyPlan(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan,
	states map[string]clusters.ClusterState) map[string]targetResult {
	results := make(map[string]targetResult, len(plan.View.Targets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range plan.View.Targets {
		tp := &plan.View.Targets[i]
		if tp.DiffState != meshv1alpha1.DiffStateComputed {
			continue
		}
		state, ok := states[tp.Cluster]
		if !usable(state, ok) {
			// The cluster went away between planning and writing.
			continue
		}
		// The targets' goroutines started above write results meanwhile.
		set := func(res targetResult) {
			mu.Lock()
			results[tp.Cluster] = res
			mu.Unlock()
		}
		if len(tp.Create)+len(tp.Update)+len(tp.Delete) == 0 {
			set(targetResult{targetOutcome: targetOutcome{reconciled: true, applied: tp.DesiredPeers}})
			continue
		}
		client, err := r.clusters.PeerClient(mesh, tp.Cluster)
		if err != nil {
			set(targetResult{targetOutcome: targetOutcome{reconciled: true, errors: []string{err.Error()}}})
			continue
		}
		work := targetWork{
			mesh:    mesh,
			cluster: tp.Cluster,
			target:  tp,
			desired: plan.DesiredPeers[tp.Cluster],
			cached:  cachedOf(state.Peers, tp),
			client:  client,
			recent:  r.recent,
			writer:  r.writer,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			set(applyTarget(ctx, work))
		}()
	}
	wg.Wait()
	return results
}

// cachedOf is what a pass on target reads of its cached Peers (a
// ClusterState's, sorted by name): those it creates, updates or deletes.
// A map of every cached Peer, thousands on a large mesh, cost more than a
// single change's writes (issue 21).
func cachedOf(peers []*kilov1alpha1.Peer, target *meshv1alpha1.TargetPlan) map[string]*kilov1alpha1.Peer {
	m := make(map[string]*kilov1alpha1.Peer, len(target.Create)+len(target.Update)+len(target.Delete))
	find := func(name string) {
		if i, ok := slices.BinarySearchFunc(peers, name, func(p *kilov1alpha1.Peer, n string) int { return strings.Compare(p.Name, n) }); ok {
			m[name] = peers[i]
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

func byName(peers []*kilov1alpha1.Peer) map[string]*kilov1alpha1.Peer {
	m := make(map[string]*kilov1alpha1.Peer, len(peers))
	for _, p := range peers {
		m[p.Name] = p
	}
	return m
}

// report feeds a pass into the per-mesh metrics.
func (r *Reconciler) report(mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan, outcomes map[string]targetOutcome) {
	if plan == nil {
		return
	}
	name := mesh.Namespace + "/" + mesh.Name
	for _, tp := range plan.View.Targets {
		if tp.DiffState == meshv1alpha1.DiffStateComputed {
			peersDesired.WithLabelValues(name, tp.Cluster).Set(float64(tp.DesiredPeers))
		}
	}
	for _, c := range plan.View.Clusters {
		// From 0, so that the first failure is an increase.
		applyErrors.WithLabelValues(name, c.Name).Add(0)
		v := 0.0
		if c.Reachable {
			v = 1
		}
		clusterReachable.WithLabelValues(name, c.Name).Set(v)
		if out, ok := outcomes[c.Name]; ok && out.reconciled {
			peersManaged.WithLabelValues(name, c.Name).Set(float64(out.applied))
		}
	}
}

// forget drops what the reconciler remembers of a mesh that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.events.forget(key)
	r.departedHere.forget(key)
	r.recent.forget(key)
	r.series.forget(key.String())
	r.clock.forget(key)
	r.svcCurrent.forget(key)
	forgetMeshMetrics(key.String())
}

func clusterNames(mesh *meshv1alpha1.ClusterMesh) []string {
	names := make([]string, len(mesh.Spec.Clusters))
	for i, c := range mesh.Spec.Clusters {
		names[i] = c.Name
	}
	return names
}
