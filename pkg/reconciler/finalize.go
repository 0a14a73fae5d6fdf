package reconciler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// maxLeftBehindNames bounds the Peer names a PeersLeftBehind event lists
// per cluster.
const maxLeftBehindNames = 20

// finalize removes what a deleted mesh wrote from every member cluster and
// from the clusters that left it and are still held, then releases the
// mesh. An unreachable cluster holds the mesh back, with a condition saying
// so, until MeshDeletionTimeout after the deletion; then the mesh is
// released and a Warning event names what may be left there.
func (r *Reconciler) finalize(ctx context.Context, mesh *meshv1alpha1.ClusterMesh) (syncResult, error) {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	if !hasFinalizer(mesh) {
		return syncResult{}, nil
	}
	members := r.clusters.Members(mesh)
	var targets []clusters.Member
	for _, name := range slices.Sorted(maps.Keys(members)) {
		targets = append(targets, members[name])
	}
	targets = append(targets, r.departedHolds(mesh)...)

	removed, more, unreachable, errs := r.removeFrom(ctx, mesh, targets)
	now := time.Now()
	if removed > 0 {
		klog.InfoS("Removed what a deleted mesh wrote", "mesh", key, "objects", removed)
	}
	if len(errs) > 0 {
		msg := "removing the mesh's Peers and services objects failed on " + summarize(errs, 3)
		if err := r.writeDeletionStatus(ctx, mesh, ReasonRemovalFailed, msg, now); err != nil {
			return syncResult{}, err
		}
		return syncResult{}, fmt.Errorf("finalizing %s: %s", key, msg)
	}
	if more {
		// A list stopped at its bound: the next pass removes the rest.
		return syncResult{requeueAfter: cacheRecheck}, nil
	}

	deadline := mesh.DeletionTimestamp.Add(r.opts.MeshDeletionTimeout)
	if len(unreachable) > 0 && now.Before(deadline) {
		msg := fmt.Sprintf("the mesh's Peers are removed from every reachable cluster; waiting for %s to answer, until %s, "+
			"to remove its Peers there too", strings.Join(unreachable, ", "), deadline.UTC().Format(time.RFC3339))
		if err := r.writeDeletionStatus(ctx, mesh, ReasonRemovalBlocked, msg, now); err != nil {
			return syncResult{}, err
		}
		// A cluster that comes back requeues the mesh through the change
		// handler; the deadline does so in any case.
		return syncResult{requeueAfter: deadline.Sub(now)}, nil
	}

	if len(unreachable) > 0 {
		msg := r.leftBehind(mesh, members, unreachable)
		klog.InfoS("Releasing a deleted mesh with unreachable clusters", "mesh", key, "clusters", unreachable)
		r.recorder.Event(mesh, corev1.EventTypeWarning, EventPeersLeftBehind, msg)
	} else {
		r.recorder.Event(mesh, corev1.EventTypeNormal, EventPeersRemoved, "the mesh's Peers were removed from every member cluster")
	}
	// Recorded first: the mesh may be gone the moment the finalizer is.
	r.finalized.add(mesh.UID, now)
	if _, err := r.meshAPI.setFinalizers(ctx, mesh, withoutFinalizer(mesh.Finalizers)); err != nil {
		return syncResult{}, err
	}
	for _, mb := range targets {
		if mb.Hold != nil {
			r.clusters.Release(mb.Hold.Key)
		}
	}
	r.forget(key)
	return syncResult{}, nil
}

// removeFrom removes what the deleted mesh wrote from targets, its members
// and the clusters that left it ("ENTRY (departed)"). It returns how many
// objects it removed, whether more are left to list, the targets that
// cannot be acted on and may hold something, and the failures.
func (r *Reconciler) removeFrom(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, targets []clusters.Member) (removed int, more bool, unreachable, errs []string) {
	for _, mb := range targets {
		name := mb.Entry
		if mb.Hold != nil {
			name += " (departed)"
		}
		if !usable(mb.State, true) {
			if mb.Hold != nil || r.mayHoldWritten(mesh, mb) {
				unreachable = append(unreachable, name)
			}
			continue
		}
		res := r.cleanup(ctx, mesh, mb, r.writtenBy(mesh))
		removed += res.found
		more = more || res.more
		if res.err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, res.err))
		}
	}
	return removed, more, unreachable, errs
}

// leftBehind names, per unreachable cluster, the Peers of the mesh that may
// remain there: those its cache last held and those the plan puts there.
func (r *Reconciler) leftBehind(mesh *meshv1alpha1.ClusterMesh, members map[string]clusters.Member, unreachable []string) string {
	plan, err := r.planner.Plan(mesh)
	if err != nil {
		klog.ErrorS(err, "Planning a deleted mesh failed; naming only cached Peers", "mesh", klog.KObj(mesh))
	}
	var parts []string
	for _, cluster := range unreachable {
		set := map[string]struct{}{}
		for _, p := range members[cluster].State.Peers.All() {
			if planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID) {
				set[p.Name] = struct{}{}
			}
		}
		if plan != nil {
			for _, p := range plan.DesiredPeers[cluster].All() {
				set[p.Name] = struct{}{}
			}
		}
		names := slices.Sorted(maps.Keys(set))
		desc := "no Peer known"
		if len(names) > 0 {
			desc = examples(names, maxLeftBehindNames)
		}
		parts = append(parts, fmt.Sprintf("cluster %s: %s", cluster, desc))
	}
	return fmt.Sprintf("released after %s without reaching every member cluster; Peers labelled %s=%s may be left behind, delete them by hand: %s",
		r.opts.MeshDeletionTimeout, planner.LabelMeshUID, mesh.UID, strings.Join(parts, "; "))
}

func (r *Reconciler) writeDeletionStatus(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, reason, msg string, now time.Time) error {
	st := deletionStatus(mesh, reason, msg, metav1.NewTime(now))
	if !statusChanged(&mesh.Status, &st) {
		return nil
	}
	return r.meshAPI.applyStatus(ctx, mesh, st)
}

func hasFinalizer(mesh *meshv1alpha1.ClusterMesh) bool {
	return slices.Contains(mesh.Finalizers, Finalizer)
}

func withoutFinalizer(list []string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(f string) bool { return f == Finalizer })
}

// deletionStatus is the status of a deleted mesh whose Peers are being
// removed: Ready says what the deletion waits for.
func deletionStatus(mesh *meshv1alpha1.ClusterMesh, reason, message string, now metav1.Time) meshv1alpha1.ClusterMeshStatus {
	st := *mesh.Status.DeepCopy()
	st.ObservedGeneration = mesh.Generation
	setCondition(&st, mesh.Generation, now, meshv1alpha1.ConditionReady, metav1.ConditionFalse, reason, message)
	return st
}
