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

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// A mesh vanishes when it leaves storage without its finalizer having run
// here: a tenant removed the finalizer before deleting it, or another
// replica led meanwhile. The member caches hold the connections of every
// deleted mesh (clusters.HoldDeleted), and those of entries that had left
// it, for MeshDeletionTimeout and a margin; the leader removes what the
// mesh wrote through them once storage, not a cache, says the mesh of
// that UID is gone, then lets them go. A mesh finalized here only lets
// them go. Meshes deleted while no replica ran are the orphan sweep's
// (orphans.go).

// finalizedHere remembers, for an hour, the UIDs whose finalizer ran on
// this replica: what they wrote is gone already.
type finalizedHere struct {
	mu  sync.Mutex
	uid map[types.UID]time.Time
}

func (f *finalizedHere) add(uid types.UID, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.uid == nil {
		f.uid = map[types.UID]time.Time{}
	}
	f.uid[uid] = now
	for u, at := range f.uid {
		if now.Sub(at) > time.Hour {
			delete(f.uid, u)
		}
	}
}

func (f *finalizedHere) has(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.uid[uid]
	return ok
}

// meshDeleted is the informer's delete handler: the mesh's connections are
// held by then, or soon (clusters.Manager.Forget); its key's pass looks at them.
func (r *Reconciler) meshDeleted(obj any) {
	if mesh := asMesh(obj); mesh != nil && r.Leading() && !r.finalized.has(mesh.UID) {
		klog.InfoS("ClusterMesh deleted without its finalizer having run here; removing what it wrote", "mesh", klog.KObj(mesh), "uid", mesh.UID)
	}
	r.enqueueObject(obj)
}

// removeVanished removes what the meshes of key that storage no longer
// holds wrote on the connections still held for them, and lets those go.
func (r *Reconciler) removeVanished(ctx context.Context, key types.NamespacedName) (syncResult, error) {
	current := types.UID("")
	if obj, ok, _ := r.meshes.GetIndexer().GetByKey(key.String()); ok {
		if m := asMesh(obj); m != nil {
			current = m.UID
		}
	}
	byUID := map[types.UID][]clusters.Member{}
	for _, mb := range r.clusters.Held(key) {
		if k := mb.Hold.Key; k.Why == clusters.HoldDeleted && k.UID != current || k.Why == clusters.HoldDeparted && k.UID != current {
			byUID[k.UID] = append(byUID[k.UID], mb)
		}
	}
	var res syncResult
	for _, uid := range slices.Sorted(maps.Keys(byUID)) {
		held := byUID[uid]
		if r.finalized.has(uid) {
			r.release(held)
			continue
		}
		next, err := r.removeVanishedMesh(ctx, &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: uid}}, held)
		if err != nil {
			return syncResult{}, err
		}
		res.requeueAfter = sooner(res.requeueAfter, next)
	}
	return res, nil
}

// removeVanishedMesh works on one vanished mesh, held on held; it returns
// when to look again (0: done).
func (r *Reconciler) removeVanishedMesh(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, held []clusters.Member) (time.Duration, error) {
	gone, err := r.meshGone(ctx, mesh.Namespace, mesh.Name, mesh.UID)
	if err != nil {
		return 0, err
	}
	if !gone {
		r.release(held)
		return 0, nil
	}
	now := time.Now()
	giveUp := held[0].Hold.Deadline
	for _, mb := range held {
		if mb.Hold.Deadline.Before(giveUp) {
			giveUp = mb.Hold.Deadline
		}
	}
	giveUp = giveUp.Add(-departureMargin)
	settled := !slices.ContainsFunc(held, func(mb clusters.Member) bool { return !mb.Settled() })
	if !settled && now.Before(giveUp) {
		return settleRecheck, nil
	}
	var pending, errs []string
	removed, more := 0, false
	for _, mb := range held {
		if !usable(mb.State, true) {
			pending = append(pending, mb.Entry)
			continue
		}
		res := r.cleanup(ctx, mesh, mb, written{peers: true, services: r.services != nil})
		removed += res.found
		more = more || res.more
		if res.err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", mb.Entry, res.err))
		}
	}
	switch {
	case len(errs) > 0:
		return 0, fmt.Errorf("removing what deleted ClusterMesh %s/%s wrote: %s", mesh.Namespace, mesh.Name, summarize(errs, 3))
	case more:
		return cacheRecheck, nil
	case len(pending) > 0 && now.Before(giveUp):
		return min(giveUp.Sub(now), time.Minute), nil
	}
	msg := fmt.Sprintf("the mesh was deleted without its finalizer; %d objects it wrote (Peers, services objects) were removed from its member clusters", removed)
	typ, reason := corev1.EventTypeNormal, EventPeersRemoved
	if len(pending) > 0 {
		slices.Sort(pending)
		typ, reason = corev1.EventTypeWarning, EventPeersLeftBehind
		msg += fmt.Sprintf("; %s could not be reached within %s, objects labelled %s=%s may be left there",
			strings.Join(slices.Compact(pending), ", "), r.opts.MeshDeletionTimeout, planner.LabelMeshUID, mesh.UID)
	}
	r.recorder.Event(mesh, typ, reason, msg)
	klog.InfoS("What a ClusterMesh deleted without its finalizer wrote is removed", "mesh", klog.KObj(mesh), "uid", mesh.UID, "objects", removed, "unreachable", pending)
	r.release(held)
	return 0, nil
}

func (r *Reconciler) release(held []clusters.Member) {
	for _, mb := range held {
		r.clusters.Release(mb.Hold.Key)
	}
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

func asMesh(obj any) *meshv1alpha1.ClusterMesh {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	mesh, _ := obj.(*meshv1alpha1.ClusterMesh)
	return mesh
}
