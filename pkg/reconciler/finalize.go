package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// maxLeftBehindNames bounds the Peer names a PeersLeftBehind event lists
// per cluster.
const maxLeftBehindNames = 20

// finalize removes a deleted mesh's Peers from every member cluster, then
// releases the mesh. An unreachable cluster holds the mesh back, with a
// condition saying so, until MeshDeletionTimeout after the deletion; then
// the mesh is released and a Warning event names what may be left there.
func (r *Reconciler) finalize(ctx context.Context, mesh *meshv1alpha1.ClusterMesh) (syncResult, error) {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	if !hasFinalizer(mesh) {
		return syncResult{}, nil
	}
	states := r.clusters.Snapshot(mesh)
	names := make([]string, 0, len(mesh.Spec.Clusters))
	for _, c := range mesh.Spec.Clusters {
		names = append(names, c.Name)
	}
	slices.Sort(names)

	var unreachable, svcPending []string
	var errs []string
	removed := 0
	for _, name := range names {
		st, ok := states[name]
		if !usable(st, ok) {
			if mayHoldPeers(mesh, name, st) || r.mayHoldServices(mesh, name, st) {
				unreachable = append(unreachable, name)
			}
			continue
		}
		n, err := r.removePeers(ctx, mesh, name, st)
		removed += n
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
		}
		found, err := r.removeServicesOnDeletion(ctx, mesh, name)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: services objects: %v", name, err))
		}
		if found > 0 {
			svcPending = append(svcPending, name)
		}
	}
	n, pending, svcDeparted, failed := r.removeFromDeparted(ctx, mesh)
	removed += n
	unreachable = append(unreachable, pending...)
	svcPending = append(svcPending, svcDeparted...)
	errs = append(errs, failed...)
	now := time.Now()
	if removed > 0 {
		klog.InfoS("Removed the Peers of a deleted mesh", "mesh", key, "peers", removed)
	}
	if len(errs) > 0 {
		msg := "removing the mesh's Peers failed on " + summarize(errs, 3)
		if err := r.writeDeletionStatus(ctx, mesh, ReasonRemovalFailed, msg, now); err != nil {
			return syncResult{}, err
		}
		return syncResult{}, fmt.Errorf("finalizing %s: %s", key, msg)
	}

	if len(svcPending) > 0 {
		// Deleted by this pass: the next one's list confirms them gone.
		msg := "removing the mesh's ServiceImports, derived Services and EndpointSlices from " + strings.Join(svcPending, ", ")
		if err := r.writeDeletionStatus(ctx, mesh, ReasonServicesRemoving, msg, now); err != nil {
			return syncResult{}, err
		}
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
		msg := r.leftBehind(mesh, states, unreachable)
		klog.InfoS("Releasing a deleted mesh with unreachable clusters", "mesh", key, "clusters", unreachable)
		r.recorder.Event(mesh, corev1.EventTypeWarning, EventPeersLeftBehind, msg)
	} else {
		r.recorder.Event(mesh, corev1.EventTypeNormal, EventPeersRemoved, "the mesh's Peers were removed from every member cluster")
	}
	// Recorded first: the mesh may be gone the moment the finalizer is.
	r.departures.finalizedHere(mesh.UID, now)
	if _, err := r.meshAPI.setFinalizers(ctx, mesh, withoutFinalizer(mesh.Finalizers)); err != nil {
		return syncResult{}, err
	}
	r.releaseDepartedHolds(key)
	r.forget(key)
	return syncResult{}, nil
}

// removeFromDeparted removes a deleted mesh's Peers from the clusters that
// left it and are still held (their departure ends with the mesh), named
// "ENTRY (departed)"; those it cannot act on yet are pending.
func (r *Reconciler) removeFromDeparted(ctx context.Context, mesh *meshv1alpha1.ClusterMesh) (removed int, pending, svcPending, errs []string) {
	for _, h := range r.clusters.Held(types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}) {
		if h.Key.Owner != clusters.OwnerDeparted {
			continue
		}
		name := h.Key.Entry + " (departed)"
		if !usable(h.State, true) {
			pending = append(pending, name)
			continue
		}
		n, err := r.removeListed(ctx, mesh, h.Key)
		removed += n
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
		}
		found, err := r.removeServicesHeld(ctx, mesh, h.Key)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: services objects: %v", name, err))
		}
		if found > 0 {
			svcPending = append(svcPending, name)
		}
	}
	return removed, pending, svcPending, errs
}

// releaseDepartedHolds lets go of the departed connections of a mesh
// whose finalizer is done.
func (r *Reconciler) releaseDepartedHolds(key types.NamespacedName) {
	for _, h := range r.clusters.Held(key) {
		if h.Key.Owner == clusters.OwnerDeparted {
			r.clusters.Release(h.Key)
		}
	}
}

// mayHoldPeers reports whether a cluster that cannot be acted on may hold
// Peers of the mesh, so that its deletion must wait for it. Its cache,
// when it had synced before the cluster went away, knows; otherwise the
// last status does. A cluster the mesh never reached (a missing Secret, a
// refused kubeconfig) holds nothing and holds nothing up.
func mayHoldPeers(mesh *meshv1alpha1.ClusterMesh, cluster string, st clusters.ClusterState) bool {
	if st.Synced {
		return slices.ContainsFunc(st.Peers, func(p *kilov1alpha1.Peer) bool {
			return planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID)
		})
	}
	cs := findClusterStatus(mesh.Status.Clusters, cluster)
	return cs != nil && cs.PeersApplied > 0
}

// removePeers deletes every Peer of the mesh the cluster's cache holds.
func (r *Reconciler) removePeers(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, cluster string, st clusters.ClusterState) (int, error) {
	if !slices.ContainsFunc(st.Peers, func(p *kilov1alpha1.Peer) bool { return planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID) }) {
		return 0, nil
	}
	client, err := r.clusters.PeerClient(mesh, cluster)
	if err != nil {
		return 0, err
	}
	return r.removeOwned(ctx, mesh, cluster, st.Peers, client)
}

// leftBehind names, per unreachable cluster, the Peers of the mesh that may
// remain there: those its cache last held and those the plan puts there.
func (r *Reconciler) leftBehind(mesh *meshv1alpha1.ClusterMesh, states map[string]clusters.ClusterState, unreachable []string) string {
	plan, err := r.planner.Plan(mesh)
	if err != nil {
		klog.ErrorS(err, "Planning a deleted mesh failed; naming only cached Peers", "mesh", klog.KObj(mesh))
	}
	var parts []string
	for _, cluster := range unreachable {
		set := map[string]struct{}{}
		for _, p := range states[cluster].Peers {
			if planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID) {
				set[p.Name] = struct{}{}
			}
		}
		if plan != nil {
			for _, p := range plan.DesiredPeers[cluster].All() {
				set[p.Name] = struct{}{}
			}
		}
		names := make([]string, 0, len(set))
		for n := range set {
			names = append(names, n)
		}
		slices.Sort(names)
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
