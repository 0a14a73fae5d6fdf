package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// One way out. Everything a mesh wrote on a member cluster (its Peers,
// and its ServiceImports, derived Services and EndpointSlices) leaves
// through cleanup, whichever way the mesh or the cluster goes: the
// finalizer (finalize.go), an entry that left (departed.go), a mesh that
// vanished without its finalizer (vanished.go), the orphan sweep
// (orphans.go), services Disabled (services.go). Each way out only
// chooses the connection and how long to try. cleanup lists what carries
// the mesh's labels from the cluster's API server (a cache may lag behind
// the writes, and the services caches stop with the services), deletes
// exactly the objects carrying all of them, each with the UID it was
// listed with, through the fair writer, and says what may be left.
//
// Removing exactly what carries a mesh's labels and UID is never more
// than its author could do by hand, whatever the author's rights are now:
// only the server or someone who may already write the object can put
// those labels there. A cluster that does not answer keeps its objects
// until it does: nothing is deleted on a guess.

// written says which of what a mesh writes cleanup removes.
type written struct {
	peers, services bool
}

// writtenBy is what mesh may have written: Peers, and its services
// objects when it carries services or may still have them.
func (r *Reconciler) writtenBy(mesh *meshv1alpha1.ClusterMesh) written {
	return written{peers: true, services: r.services != nil && servicesOnce(mesh)}
}

// servicesOnce reports whether mesh carries services now or may still
// have services objects on its members from when it did.
func servicesOnce(mesh *meshv1alpha1.ClusterMesh) bool {
	return mesh.Spec.MultiClusterServices == meshv1alpha1.MultiClusterServicesEnabled || servicesMayRemain(mesh)
}

// servicesMayRemain reports whether a mesh with services Disabled may still
// have services objects on its members: its status, the only record that
// survives a restart, shows a ServicesExclusive condition other than the
// one written once none is left (a mesh created Disabled has none).
func servicesMayRemain(mesh *meshv1alpha1.ClusterMesh) bool {
	c := meta.FindStatusCondition(mesh.Status.Conditions, meshv1alpha1.ConditionServicesExclusive)
	return c != nil && c.Reason != ReasonServicesDisabled
}

// kinds lists what cleanup lists, services objects from their
// ServiceImports on: a cluster that refuses those never got any.
func (w written) kinds() []clusters.Kind {
	var out []clusters.Kind
	if w.peers {
		out = append(out, clusters.KindPeer)
	}
	if w.services {
		out = append(out, clusters.KindServiceImport, clusters.KindService, clusters.KindEndpointSlice)
	}
	return out
}

// Bounds of one cleanup of one kind on one member: pages of
// cleanupListLimit, at most cleanupPages of them; more are removed by the
// passes that follow.
const (
	cleanupListLimit = 500
	cleanupPages     = 10
)

// cleaned is what cleanup did on one member.
type cleaned struct {
	// found counts the objects of the mesh it listed, and deleted (or
	// found gone meanwhile); 0 with done confirms the member clean.
	found int
	// more: a list stopped at its bound; the member is not known clean.
	more bool
	// err: a list or a deletion failed; something may be left.
	err error
}

// done reports whether nothing the mesh wrote is left on the member.
func (c cleaned) done() bool { return !c.more && c.err == nil }

// cleanup removes what owner wrote on mb, of the kinds w names. mb must be
// usable (see usable); the caller says what an unusable one may hold.
func (r *Reconciler) cleanup(ctx context.Context, owner *meshv1alpha1.ClusterMesh, mb clusters.Member, w written) cleaned {
	var res cleaned
	objs, more, err := listWritten(ctx, owner, mb, w)
	res.found, res.more = len(objs), more
	if err != nil {
		res.err = err
		return res
	}
	if len(objs) == 0 {
		return res
	}
	failures := r.deleteWritten(ctx, owner, mb, objs)
	klog.InfoS("Removed what a mesh wrote on a cluster", "mesh", klog.KObj(owner), "uid", owner.UID, "cluster", mb.Entry,
		"connection", mb.Name(), "found", len(objs), "failed", len(failures))
	if len(failures) > 0 {
		res.err = fmt.Errorf("%d deletions failed: %s", len(failures), summarize(failures, 3))
	}
	return res
}

// writtenObject is one listed object of a mesh.
type writtenObject struct {
	kind clusters.Kind
	meta metav1.PartialObjectMetadata
}

// listWritten lists the objects of w's kinds on mb carrying all of owner's
// labels and not being deleted already; more says a list stopped at its bound.
func listWritten(ctx context.Context, owner *meshv1alpha1.ClusterMesh, mb clusters.Member, w written) ([]writtenObject, bool, error) {
	selector := planner.LabelMeshUID + "=" + string(owner.UID)
	var out []writtenObject
	more := false
	for _, kind := range w.kinds() {
		cont := ""
		for page := 0; ; page++ {
			if page == cleanupPages {
				more = true
				break
			}
			list, err := mb.List(ctx, kind, selector, cleanupListLimit, cont)
			switch {
			case err != nil && kind == clusters.KindServiceImport && neverWritten(err):
				klog.V(2).InfoS("A cluster cannot have services objects of a mesh", "mesh", klog.KObj(owner), "cluster", mb.Entry, "why", writeErrorText(err))
				return out, more, nil
			case err != nil && kind == clusters.KindPeer && apierrors.IsNotFound(err):
				// The cluster does not serve Peers: none was written.
			case err != nil:
				// The status says how, never the member's answer or address.
				klog.V(2).InfoS("Listing what a mesh wrote failed", "mesh", klog.KObj(owner), "cluster", mb.Entry, "kind", kind, "err", err)
				return nil, false, fmt.Errorf("listing %ss: %s", kind, writeErrorText(err))
			}
			if list == nil {
				break
			}
			for _, o := range list.Items {
				if ownedBy(owner, o) {
					out = append(out, writtenObject{kind: kind, meta: o})
				}
			}
			if cont = list.Continue; cont == "" {
				break
			}
		}
	}
	return out, more, nil
}

// deleteWritten deletes objs through the fair writer, each with its UID
// as precondition; one already gone, or replaced since it was listed,
// counts as done. It returns the failures, sorted. The first deletion the
// cluster does not answer stops the others.
func (r *Reconciler) deleteWritten(ctx context.Context, owner *meshv1alpha1.ClusterMesh, mb clusters.Member, objs []writtenObject) []string {
	key := types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}
	meshName := owner.Namespace + "/" + owner.Name
	var (
		mu          sync.Mutex
		failures    []string
		wg          sync.WaitGroup
		unreachable atomic.Bool
		skipped     atomic.Int64
	)
	for _, o := range objs {
		wg.Add(1)
		r.writer.submit(mb.Name(), key, func() {
			defer wg.Done()
			if unreachable.Load() || ctx.Err() != nil {
				skipped.Add(1)
				return
			}
			what := fmt.Sprintf("%s %s", o.kind, objectName(o.meta))
			err := mb.Delete(ctx, o.kind, o.meta.Namespace, o.meta.Name, o.meta.UID)
			// A mesh's series go with it; the sweep's meshes never had any.
			counted := o.kind == clusters.KindPeer && mb.Entry != ""
			if counted {
				peerWrites.WithLabelValues(meshName, mb.Entry, "delete").Inc()
			}
			var status apierrors.APIStatus
			switch {
			case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
				return
			case !errors.As(err, &status):
				unreachable.Store(true)
			}
			if counted {
				applyErrors.WithLabelValues(meshName, mb.Entry).Inc()
			}
			mu.Lock()
			failures = append(failures, fmt.Sprintf("deleting %s: %s", what, writeErrorText(err)))
			mu.Unlock()
		})
	}
	releaseWorker(ctx)
	wg.Wait()
	slices.Sort(failures)
	if n := skipped.Load(); n > 0 {
		failures = append(failures, fmt.Sprintf("%d more deletions not attempted: the cluster stopped answering", n))
	}
	return failures
}

// ownedBy reports whether o carries all of owner's labels and is not being
// deleted already: no other object is ever deleted.
func ownedBy(owner *meshv1alpha1.ClusterMesh, o metav1.PartialObjectMetadata) bool {
	return o.DeletionTimestamp == nil && planner.LabelsManagedBy(o.Labels, owner.Namespace, owner.Name, owner.UID)
}

func objectName(o metav1.PartialObjectMetadata) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// mayHoldWritten reports whether a member that cannot be acted on may hold
// something mesh wrote, so that removal must wait for it: its Peers or its
// services objects. A cluster the mesh never reached (a missing Secret, a
// refused kubeconfig) holds nothing and holds nothing up.
func (r *Reconciler) mayHoldWritten(mesh *meshv1alpha1.ClusterMesh, mb clusters.Member) bool {
	st := mb.State
	cs := findClusterStatus(mesh.Status.Clusters, mb.Entry)
	if st.Synced {
		for _, p := range st.Peers.All() {
			if planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID) {
				return true
			}
		}
	} else if cs != nil && cs.PeersApplied > 0 {
		return true
	}
	if !r.writtenBy(mesh).services {
		return false
	}
	return st.Synced || (st.Services != nil && !st.Services.Since.IsZero()) || (cs != nil && cs.PeersApplied > 0)
}

// neverWritten reports whether a refused list of ServiceImports shows that
// the mesh wrote none on the cluster: the mcs-api CRDs are not served, or
// the identity may not list them, without which the services caches never
// synced and nothing was written there.
func neverWritten(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err)
}

// writeErrorText says why a write failed without the member's answer
// (docs/security.md): its status reason and code, or that it did not answer.
func writeErrorText(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return fmt.Sprintf("refused (%s, HTTP %d)", s.Reason, s.Code)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return "the cluster did not answer"
}
