package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

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
	peers := r.writePeers(ctx, mesh, plan, m.members, trace)
	svcRes := r.syncServices(ctx, mesh, m.members)
	// Recorded in the same write as observedGeneration: a client that
	// waits for the generation sees the departures it caused.
	departures := r.settleDepartures(ctx, mesh, plan, m.members, now)

	status := buildStatus(statusInput{mesh: mesh, plan: plan, planErr: planErr, outcomes: peers.outcomes, departed: departures.items,
		servicesRemoving: svcRes.removing, now: metav1.NewTime(now)})
	r.reportPass(mesh, plan, peers.outcomes, m.states, status.Conditions)
	if statusChanged(&mesh.Status, &status) {
		if err := r.meshAPI.applyStatus(ctx, mesh, status); err != nil {
			return syncResult{}, err
		}
	}
	facts := append(append(peers.facts, svcRes.facts...), departures.events...)
	r.announce(mesh, plan, m.states, append(peers.actions, svcRes.events...), facts)

	switch {
	case planErr != nil:
		return syncResult{}, planErr
	case len(peers.errs) > 0:
		return syncResult{}, fmt.Errorf("writing Peers of %s: %s", key, strings.Join(peers.errs, "; "))
	case svcRes.err(key) != nil:
		return syncResult{}, svcRes.err(key)
	}
	next := nextPass(plan, now, departures.next, peers.unseen || svcRes.unseen)
	return syncResult{requeueAfter: next}, nil
}

// forget drops what the reconciler remembers of a mesh that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.events.forget(key)
	r.recorder.forget(key)
	r.departedHere.forget(key)
	r.written.forget(key)
	r.series.forget(key.String())
	r.clock.forget(key)
	r.svcCurrent.forget(key)
	forgetMeshMetrics(key.String())
	r.reported.forget(key.String())
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
