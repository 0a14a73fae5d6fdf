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
// mesh, and a mesh may be deleted while no replica leads. Such Peers go
// too, from every cluster this server can still reach:
//
//   - a mesh deleted while this replica leads, without its finalizer having
//     run here, is "departed": its clusters are held in the member caches
//     under a key of its own (the plan cache releases the mesh's own key at
//     once) until its Peers are removed, for at most MeshDeletionTimeout;
//   - every orphanSweepPeriod, and when a term starts, the Peers of every
//     connection the member caches hold are checked for meshes this
//     replica saw deleted (another replica may have led then).
//
// A Peer is removed only when storage, not a cache, says that no mesh of
// its namespace, name and UID exists: a cache that is behind or a Peer the
// informer has not seen the mesh of must never cost a Peer. And only the
// Peers of meshes this replica saw deleted: another installation of this
// server sharing a member cluster labels its Peers alike, and its meshes
// are not in this one's storage either. A mesh deleted while no replica
// ran is therefore not known to have been ours, and its Peers stay (the
// finalizer, which runs when the server is back, is what removes them).

// orphanSweepPeriod is how often the Peers of every connection are checked
// for a mesh that no longer exists.
const orphanSweepPeriod = time.Minute

// departedMesh is a deleted mesh whose Peers are being removed.
type departedMesh struct {
	// mesh is the last known object: its namespace, name and UID mark its Peers.
	mesh *meshv1alpha1.ClusterMesh
	// via holds the mesh's clusters in the member caches, under a key no
	// mesh can have (a mesh name has no dots).
	via      *meshv1alpha1.ClusterMesh
	deadline time.Time
}

// departures tracks departed meshes by the key of via, the UIDs whose
// finalizer ran on this replica (their Peers are gone already), and the
// meshes this replica saw deleted, which the sweep looks for.
type departures struct {
	mu        sync.Mutex
	byKey     map[types.NamespacedName]*departedMesh
	finalized map[types.UID]time.Time
	gone      map[types.UID]goneMesh
}

// goneMesh is a mesh this replica saw deleted, and when.
type goneMesh struct {
	namespace, name string
	at              time.Time
}

func newDepartures() *departures {
	return &departures{byKey: map[types.NamespacedName]*departedMesh{}, finalized: map[types.UID]time.Time{}, gone: map[types.UID]goneMesh{}}
}

// sawDeleted records a deleted mesh for the sweep.
func (d *departures) sawDeleted(mesh *meshv1alpha1.ClusterMesh, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gone[mesh.UID] = goneMesh{namespace: mesh.Namespace, name: mesh.Name, at: now}
}

// goneSince returns the meshes seen deleted, forgetting those seen before
// since: their Peers were looked for long enough.
func (d *departures) goneSince(since time.Time) map[types.UID]goneMesh {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]goneMesh, len(d.gone))
	for uid, g := range d.gone {
		if g.at.Before(since) {
			delete(d.gone, uid)
			continue
		}
		out[uid] = g
	}
	return out
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
	if mesh == nil || mesh.UID == "" {
		return
	}
	r.departures.sawDeleted(mesh, time.Now())
	if !r.Leading() {
		return
	}
	r.departures.mu.Lock()
	_, finalized := r.departures.finalized[mesh.UID]
	r.departures.mu.Unlock()
	if finalized {
		return
	}
	via := mesh.DeepCopy()
	via.Name = mesh.Name + "." + string(mesh.UID)
	key := types.NamespacedName{Namespace: via.Namespace, Name: via.Name}
	r.departures.mu.Lock()
	r.departures.byKey[key] = &departedMesh{mesh: mesh, via: via, deadline: time.Now().Add(r.opts.MeshDeletionTimeout)}
	r.departures.mu.Unlock()
	r.clusters.Ensure(via)
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
	if !r.clusters.Settled(d.via) && now.Before(d.deadline) {
		return syncResult{requeueAfter: settleRecheck}, nil
	}
	states := r.clusters.Snapshot(d.via)
	var pending, errs []string
	removed := 0
	for _, name := range slices.Sorted(maps.Keys(states)) {
		st := states[name]
		if !usable(st, true) {
			pending = append(pending, name)
			continue
		}
		client, err := r.clusters.PeerClient(d.via, name)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		n, err := removeOwned(ctx, d.mesh, name, st.Peers, client)
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
	r.clusters.Forget(d.via.Namespace, d.via.Name)
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

// sweepOrphans removes, from every connection the member caches hold, the
// Peers of meshes this replica saw deleted that storage no longer holds.
// Meshes are looked for during MeshDeletionTimeout and one sweep more.
func (r *Reconciler) sweepOrphans(ctx context.Context) {
	gone := r.departures.goneSince(time.Now().Add(-r.opts.MeshDeletionTimeout - orphanSweepPeriod))
	if len(gone) == 0 {
		return
	}
	for o, conns := range orphanCandidates(r.clusters.Connections(), gone) {
		isGone, err := r.meshGone(ctx, o.namespace, o.name, o.uid)
		if err != nil || !isGone {
			if err != nil {
				klog.FromContext(ctx).Error(err, "Cannot tell whether a mesh with Peers exists; its Peers are kept", "mesh", o.namespace+"/"+o.name, "uid", o.uid)
			}
			continue
		}
		mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: o.namespace, Name: o.name, UID: o.uid}}
		for _, conn := range conns {
			n, err := removeOwned(ctx, mesh, conn.Name, conn.Peers, conn.Client)
			klog.FromContext(ctx).Info("Removed Peers of a ClusterMesh that no longer exists", "mesh", klog.KObj(mesh), "uid", o.uid,
				"connection", conn.Name, "peers", n, "err", err)
		}
	}
}

// peerOwner is the mesh a managed Peer's labels name.
type peerOwner struct {
	namespace, name string
	uid             types.UID
}

// orphanCandidates are the synced connections holding Peers of the meshes
// seen deleted, by mesh: Peers this server manages, whose namespace, name
// and UID labels are those of a mesh in gone.
func orphanCandidates(conns []clusters.Connection, gone map[types.UID]goneMesh) map[peerOwner][]clusters.Connection {
	out := map[peerOwner][]clusters.Connection{}
	for _, conn := range conns {
		if !conn.Synced {
			continue
		}
		seen := map[peerOwner]bool{}
		for _, p := range conn.Peers {
			l := p.Labels
			o := peerOwner{l[planner.LabelMeshNamespace], l[planner.LabelMeshName], types.UID(l[planner.LabelMeshUID])}
			g, saw := gone[o.uid]
			if l[planner.LabelManagedBy] != planner.ManagedByValue || !saw || g.namespace != o.namespace || g.name != o.name || seen[o] {
				continue
			}
			seen[o] = true
			out[o] = append(out[o], conn)
		}
	}
	return out
}

// removeOwned deletes, through client, the Peers of owner among peers (a
// cache's), with the delete half of a pass.
func removeOwned(ctx context.Context, owner *meshv1alpha1.ClusterMesh, cluster string, peers []*kilov1alpha1.Peer, client clusters.PeerClient) (int, error) {
	var names []string
	for _, p := range peers {
		if planner.IsManagedBy(p, owner.Namespace, owner.Name, owner.UID) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return 0, nil
	}
	p := newTargetPass(ctx, targetWork{mesh: owner, cluster: cluster, cached: byName(peers), client: client})
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
