package reconciler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// Peers whose mesh no longer exists. The finalizer removes a deleted
// mesh's Peers, but a tenant may remove the finalizer before deleting the
// mesh, a mesh may be deleted while no replica runs, and a member cluster
// may be unreachable for longer than the finalizer waits. Such Peers go
// too, from every cluster this server can still reach:
//
//   - a mesh deleted while this replica leads, without its finalizer having
//     run here, is "departed": the member caches hold its clusters (Hold,
//     owner ownerDeleted) until its Peers are removed, for at most
//     MeshDeletionTimeout;
//   - when a term starts and every orphanSweepPeriod, the Peers of every
//     connection the member caches hold are looked at: those this
//     installation wrote (planner.LabelInstallation) for a mesh that
//     storage does not hold are removed. Nothing of it is kept in memory,
//     so a restart of every replica, or a member back after a long outage,
//     loses nothing.
//
// A Peer is removed only when storage, not a cache, says that no mesh of
// its namespace, name and UID exists, with its UID as the precondition of
// the delete. Another installation of this server sharing a member cluster
// labels its Peers alike but for the installation, and its meshes are not
// in this one's storage: its Peers are never looked at. A Peer written
// before Peers carried the installation gets it at its mesh's next pass.

// orphanSweepPeriod is how often the Peers of every connection are checked
// for a mesh that no longer exists.
const orphanSweepPeriod = time.Minute

// departedMesh is a deleted mesh whose Peers are being removed.
type departedMesh struct {
	// mesh is the last known object: its namespace, name and UID mark its Peers.
	mesh     *meshv1alpha1.ClusterMesh
	deadline time.Time
}

// ownerDeleted owns the holds on a deleted mesh's clusters; the UID keeps
// them apart from those of a new mesh of the same name.
func ownerDeleted(uid types.UID) string { return "deleted/" + string(uid) }

// holdKeys are the holds of a departed mesh, one per cluster entry.
func (d *departedMesh) holdKeys() []clusters.HoldKey {
	key := types.NamespacedName{Namespace: d.mesh.Namespace, Name: d.mesh.Name}
	out := make([]clusters.HoldKey, 0, len(d.mesh.Spec.Clusters))
	for _, e := range d.mesh.Spec.Clusters {
		out = append(out, clusters.HoldKey{Mesh: key, Entry: e.Name, Owner: ownerDeleted(d.mesh.UID)})
	}
	return out
}

// departures tracks departed meshes by their key, and the UIDs whose
// finalizer ran on this replica (their Peers are gone already).
type departures struct {
	mu        sync.Mutex
	byKey     map[types.NamespacedName]*departedMesh
	finalized map[types.UID]time.Time
}

func newDepartures() *departures {
	return &departures{byKey: map[types.NamespacedName]*departedMesh{}, finalized: map[types.UID]time.Time{}}
}

// finalizedHere records that the finalizer removed uid's Peers.
func (d *departures) finalizedHere(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finalized[uid] = now
	for u, at := range d.finalized {
		if now.Sub(at) > time.Hour {
			delete(d.finalized, u)
		}
	}
}

func (d *departures) get(key types.NamespacedName) *departedMesh {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byKey[key]
}

func (d *departures) remove(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.byKey, key)
}

// meshDeleted is the informer's delete handler: a mesh that leaves without
// this replica's finalizer having removed its Peers departs.
func (r *Reconciler) meshDeleted(obj any) {
	r.enqueueObject(obj)
	mesh := asMesh(obj)
	if mesh == nil || mesh.UID == "" || !r.Leading() {
		return
	}
	r.departures.mu.Lock()
	_, finalized := r.departures.finalized[mesh.UID]
	r.departures.mu.Unlock()
	if finalized {
		return
	}
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	d := &departedMesh{mesh: mesh, deadline: time.Now().Add(r.opts.MeshDeletionTimeout)}
	r.departures.mu.Lock()
	if old := r.departures.byKey[key]; old != nil {
		r.releaseHolds(old)
	}
	r.departures.byKey[key] = d
	r.departures.mu.Unlock()
	for _, k := range d.holdKeys() {
		// Held past the deadline, so that the deadline, not the hold, ends the work.
		r.clusters.Hold(k, mesh, DepartureHold(r.opts))
	}
	klog.InfoS("ClusterMesh deleted without its Peers removed; removing them", "mesh", klog.KObj(mesh), "uid", mesh.UID)
	r.enqueue(key)
}

// removeDeparted removes a departed mesh's Peers from every cluster it
// reaches, then lets its clusters go.
func (r *Reconciler) removeDeparted(ctx context.Context, key types.NamespacedName, d *departedMesh) (syncResult, error) {
	gone, err := r.meshGone(ctx, d.mesh.Namespace, d.mesh.Name, d.mesh.UID)
	if err != nil {
		return syncResult{}, err
	}
	now := time.Now()
	if !gone {
		r.releaseDeparted(key, d)
		return syncResult{}, nil
	}
	owner := ownerDeleted(d.mesh.UID)
	var held []clusters.Held
	for _, h := range r.clusters.Held(key) {
		if h.Key.Owner == owner {
			held = append(held, h)
		}
	}
	if !allSettled(held) && now.Before(d.deadline) {
		return syncResult{requeueAfter: settleRecheck}, nil
	}
	var pending, errs []string
	removed := 0
	for _, h := range held {
		name, st := h.Key.Entry, h.State
		if !usable(st, true) {
			pending = append(pending, name)
			continue
		}
		client, err := r.clusters.HeldPeerClient(h.Key)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		n, err := r.removeOwned(ctx, d.mesh, name, st.Peers, client)
		removed += n
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
		}
	}
	if len(errs) > 0 {
		return syncResult{}, fmt.Errorf("removing the Peers of deleted ClusterMesh %s/%s: %s", d.mesh.Namespace, d.mesh.Name, summarize(errs, 3))
	}
	if len(pending) > 0 && now.Before(d.deadline) {
		return syncResult{requeueAfter: min(d.deadline.Sub(now), time.Minute)}, nil
	}
	msg := fmt.Sprintf("the mesh was deleted without its finalizer; %d of its Peers were removed from its member clusters", removed)
	typ, reason := corev1.EventTypeNormal, EventPeersRemoved
	if len(pending) > 0 {
		typ, reason = corev1.EventTypeWarning, EventPeersLeftBehind
		msg += fmt.Sprintf("; %s could not be reached within %s, Peers labelled %s=%s may be left there",
			strings.Join(pending, ", "), r.opts.MeshDeletionTimeout, planner.LabelMeshUID, d.mesh.UID)
	}
	r.recorder.Event(d.mesh, typ, reason, msg)
	klog.InfoS("Peers of a ClusterMesh deleted without its finalizer removed", "mesh", klog.KObj(d.mesh), "peers", removed, "unreachable", pending)
	r.releaseDeparted(key, d)
	return syncResult{}, nil
}

func (r *Reconciler) releaseDeparted(key types.NamespacedName, d *departedMesh) {
	r.departures.remove(key)
	r.releaseHolds(d)
}

func (r *Reconciler) releaseHolds(d *departedMesh) {
	for _, k := range d.holdKeys() {
		r.clusters.Release(k)
	}
}

// allSettled reports whether every held connection has synced its caches
// or is known to be unusable.
func allSettled(held []clusters.Held) bool {
	for _, h := range held {
		if !h.Settled {
			return false
		}
	}
	return true
}

// meshGone asks storage, through the server's own API, whether a mesh of
// that namespace, name and UID still exists.
func (r *Reconciler) meshGone(ctx context.Context, namespace, name string, uid types.UID) (bool, error) {
	current, err := r.meshAPI.get(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return current.UID != uid, nil
}

// sweepLoop sweeps when a term starts and every orphanSweepPeriod; in the
// term's first period, every settleRecheck until every connection's caches
// could be looked at (after a start they are still filling).
func (r *Reconciler) sweepLoop(ctx context.Context) {
	start := time.Now()
	for {
		wait := orphanSweepPeriod
		if complete := r.sweepOrphans(ctx); !complete && time.Since(start) < orphanSweepPeriod {
			wait = settleRecheck
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// sweepOrphans removes, from every connection the member caches hold, the
// Peers this installation wrote for meshes that storage does not hold. It
// reports whether every connection's Peers could be looked at.
func (r *Reconciler) sweepOrphans(ctx context.Context) (complete bool) {
	if r.installation == "" {
		return true
	}
	complete = true
	byOwner := map[peerOwner][]clusters.Connection{}
	for _, conn := range r.clusters.Connections() {
		if !conn.Synced {
			complete = false
			continue
		}
		for _, o := range installationOwners(conn.Peers, r.installation) {
			byOwner[o] = append(byOwner[o], conn)
		}
	}
	logger := klog.FromContext(ctx)
	for o, conns := range byOwner {
		if r.meshCached(o) {
			continue // it exists: the finalizer is the one to remove its Peers
		}
		gone, err := r.meshGone(ctx, o.namespace, o.name, o.uid)
		if err != nil || !gone {
			if err != nil {
				logger.Error(err, "Cannot tell whether a mesh with Peers exists; its Peers are kept", "mesh", o.namespace+"/"+o.name, "uid", o.uid)
			}
			continue
		}
		mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: o.namespace, Name: o.name, UID: o.uid}}
		for _, conn := range conns {
			n, err := r.removeOwned(ctx, mesh, conn.Name, conn.Peers, conn.Client)
			logger.Info("Removed Peers of a ClusterMesh that no longer exists", "mesh", klog.KObj(mesh), "uid", o.uid,
				"connection", conn.Name, "peers", n, "err", err)
		}
	}
	return complete
}

// meshCached reports whether the mesh cache holds o's mesh (that UID at
// that namespace and name): then it exists, and storage need not be asked.
// A cache miss proves nothing; storage is asked then.
func (r *Reconciler) meshCached(o peerOwner) bool {
	obj, ok, err := r.meshes.GetIndexer().GetByKey(o.namespace + "/" + o.name)
	if err != nil || !ok {
		return false
	}
	mesh := asMesh(obj)
	return mesh != nil && mesh.UID == o.uid
}

// peerOwner is the mesh a managed Peer's labels name.
type peerOwner struct {
	namespace, name string
	uid             types.UID
}

// installationOwners are the meshes that Peers of this installation among
// peers (a cache's) name, each once.
func installationOwners(peers []*kilov1alpha1.Peer, installation string) []peerOwner {
	seen := map[peerOwner]bool{}
	var out []peerOwner
	for _, p := range peers {
		l := p.Labels
		if l[planner.LabelManagedBy] != planner.ManagedByValue || l[planner.LabelInstallation] != installation || l[planner.LabelMeshUID] == "" {
			continue
		}
		o := peerOwner{l[planner.LabelMeshNamespace], l[planner.LabelMeshName], types.UID(l[planner.LabelMeshUID])}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out
}

// removeOwned deletes, through client, the Peers of owner among peers (a
// cache's), with the delete half of a pass.
func (r *Reconciler) removeOwned(ctx context.Context, owner *meshv1alpha1.ClusterMesh, cluster string, peers []*kilov1alpha1.Peer, client clusters.PeerClient) (int, error) {
	var names []string
	for _, p := range peers {
		if planner.IsManagedBy(p, owner.Namespace, owner.Name, owner.UID) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return 0, nil
	}
	p := newTargetPass(ctx, targetWork{mesh: owner, cluster: cluster, cached: byName(peers), client: client, writer: r.writer})
	p.deleteOwned(names)
	res := p.wait()
	if len(res.errors) > 0 {
		return res.deleted, fmt.Errorf("%s", summarize(res.errors, 3))
	}
	return res.deleted, nil
}

func asMesh(obj any) *meshv1alpha1.ClusterMesh {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	mesh, _ := obj.(*meshv1alpha1.ClusterMesh)
	return mesh
}
