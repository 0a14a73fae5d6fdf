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

// sooner is the shorter of two requeue delays, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// sync reconciles one mesh, and removes what meshes of the same key that
// are gone wrote: it is the only place that writes.
func (r *Reconciler) sync(ctx context.Context, key types.NamespacedName, trace *passTrace) (syncResult, error) {
	vanished, err := r.removeVanished(ctx, key)
	if err != nil {
		return vanished, err
	}
	res, err := r.syncMesh(ctx, key, trace)
	res.requeueAfter = sooner(res.requeueAfter, vanished.requeueAfter)
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
	return r.pass(ctx, mesh, trace)
}

// pass plans mesh, writes its Peers and services objects, works on its
// departures and records what it found in the status and events.
func (r *Reconciler) pass(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, trace *passTrace) (syncResult, error) {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	r.series.keep(key.String(), clusterNames(mesh))
	now := time.Now()
	m, ok := r.planMeasured(mesh)
	trace.planned = time.Now()
	if !ok {
		return syncResult{requeueAfter: cacheRecheck}, nil
	}
	plan, planErr := m.plan, m.err
	peers := peersWritten{outcomes: map[string]targetOutcome{}}
	if plan != nil {
		peers = summarizeWrites(key, r.applyPlan(ctx, mesh, plan, m.members), trace)
	}
	svcRes := r.syncServices(ctx, mesh, m.members)
	// Recorded in the same write as observedGeneration: a client that
	// waits for the generation sees the departures it caused.
	departures := r.settleDepartures(ctx, mesh, plan, m.members, now)

	facts := append(peers.facts, svcRes.facts...)
	if plan != nil {
		facts = append(facts, planEvents(plan)...)
		facts = append(facts, grantedEvents(plan)...)
		facts = append(facts, servicesSharedEvents(plan)...)
		facts = append(facts, limitEvents(m.states)...)
	}
	facts = append(facts, departures.events...)
	r.report(mesh, plan, peers.outcomes)
	reportCredentials(mesh, m.states)
	status := buildStatus(statusInput{mesh: mesh, plan: plan, planErr: planErr, outcomes: peers.outcomes, departed: departures.items,
		servicesRemoving: svcRes.removing, now: metav1.NewTime(now)})
	reportConditions(key.String(), status.Conditions)
	if statusChanged(&mesh.Status, &status) {
		if err := r.meshAPI.applyStatus(ctx, mesh, status); err != nil {
			return syncResult{}, err
		}
	}
	emit(r.recorder, mesh, append(peers.actions, svcRes.events...))
	emit(r.recorder, mesh, r.events.fresh(key, facts))

	switch {
	case planErr != nil:
		return syncResult{}, planErr
	case len(peers.errs) > 0:
		return syncResult{}, fmt.Errorf("writing Peers of %s: %s", key, strings.Join(peers.errs, "; "))
	case svcRes.err(key) != nil:
		return syncResult{}, svcRes.err(key)
	}
	next := sooner(sooner(untilCheckInExpiry(plan, now), untilGraceEnds(plan, now)), departures.next)
	if peers.unseen || svcRes.unseen {
		// Writes of an earlier pass the member caches have not shown yet:
		// their events requeue the mesh, this is the safety net.
		next = sooner(next, cacheRecheck)
	}
	return syncResult{requeueAfter: next}, nil
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
	r.written.forget(key)
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

// measured is a plan and the members read after it, of the same
// connections.
type measured struct {
	// plan is nil when planning failed with err; members are then nil.
	plan    *planner.Plan
	err     error
	members map[string]clusters.Member
	// states are the members' states, what the plan's other readers take.
	states map[string]clusters.ClusterState
}

// planMeasured plans mesh and reads its member caches so that both are of
// the connections its entries resolve to now: a plan made before an
// entry's Secret reached another cluster has the old cluster's diffs and
// figures, and is made again. It reports false when the connections kept
// moving; the mesh is looked at again then.
func (r *Reconciler) planMeasured(mesh *meshv1alpha1.ClusterMesh) (measured, bool) {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	for range 2 {
		plan, err := r.planner.Plan(mesh)
		if plan == nil {
			return measured{err: err}, true
		}
		members := r.clusters.Members(mesh)
		states := make(map[string]clusters.ClusterState, len(members))
		for name, mb := range members {
			states[name] = mb.State
		}
		stale := measuredElsewhere(plan, states)
		if len(stale) == 0 {
			return measured{plan: plan, err: err, members: members, states: states}, true
		}
		klog.V(2).InfoS("The plan was made on other connections than the entries reach now; planning again", "mesh", key, "clusters", stale)
		r.planner.Invalidate(key)
	}
	return measured{}, false
}

// measuredElsewhere names, sorted, the clusters whose plan was made on
// another connection than the one their state was read through.
func measuredElsewhere(plan *planner.Plan, states map[string]clusters.ClusterState) []string {
	var out []string
	for name, st := range states {
		if plan.Measured[name] != st.Connection {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
