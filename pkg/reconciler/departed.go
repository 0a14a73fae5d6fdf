package reconciler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// Leaving. An entry leaves a mesh when it is removed from spec.clusters or
// reaches another cluster than before (its Secret replaced). The member
// caches hold its old connection (clusters.OwnerDeparted) so that, while the
// cluster answers, the mesh's Peers are removed there; the plan removes the
// departed cluster's Peers from the others, since nothing desires them any
// more. Each departure not done is an item of status.departedClusters, the
// only record that survives a restart: an item whose connection is no
// longer held (the server restarted) cannot be worked on and is stuck with
// CredentialGone. A member that is only unreachable never departs: leaving
// is a user's act.

// Reasons and events of leaving.
const (
	ReasonDeparturesComplete = "Complete"
	EventClusterDeparted     = "ClusterDeparted"
	EventDepartureStuck      = "DepartureStuck"
)

// departureMargin is how much longer the member caches hold a departed
// connection than the reconciler works on it, so that the reconciler, not
// the end of the hold, decides when to give up.
const departureMargin = time.Minute

// DepartureHold is how long the member caches should hold the connection
// of a departed entry (clusters.Config.HoldDeparted) for these options.
func DepartureHold(o Options) time.Duration { return o.MeshDeletionTimeout + departureMargin }

// departureWork is what one pass found of the departures of a mesh.
type departureWork struct {
	items  []meshv1alpha1.DepartedCluster
	events []meshEvent
	next   time.Duration
}

// settleDepartures works on every entry that left mesh: it removes the
// mesh's Peers from the departed clusters it still holds, and reports what
// is not done yet. plan and states are this pass's (plan may be nil).
func (r *Reconciler) settleDepartures(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan,
	states map[string]clusters.ClusterState, now time.Time) departureWork {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	inSpec := map[string]bool{}
	for _, e := range mesh.Spec.Clusters {
		inSpec[e.Name] = true
	}
	prev := map[string]meshv1alpha1.DepartedCluster{}
	for _, it := range mesh.Status.DepartedClusters {
		prev[it.Name] = it
	}
	held := map[string]clusters.Held{}
	for _, h := range r.clusters.Held(key) {
		if h.Key.Owner == clusters.OwnerDeparted {
			held[h.Key.Entry] = h
		}
	}
	names := map[string]bool{}
	for n := range prev {
		names[n] = true
	}
	for n := range held {
		names[n] = true
	}
	for _, cs := range mesh.Status.Clusters {
		// Left while no connection was held: nothing can be done but say so.
		if !inSpec[cs.Name] && cs.PeersApplied > 0 {
			names[cs.Name] = true
		}
	}
	r.departedHere.keep(key, names)
	ids := r.clusters.Identities(mesh)
	var w departureWork
	for _, name := range slices.Sorted(maps.Keys(names)) {
		p, hadItem := prev[name]
		h, isHeld := held[name]
		switch {
		case !isHeld && r.departedHere.has(key, name, mesh.UID):
			// Done here; the cache shows a status from before.
		case isHeld:
			r.departedHere.set(key, name, mesh.UID, false, now)
			r.departHeld(ctx, &w, mesh, plan, states, ids, inSpec[name], h, p, hadItem, now)
		case hadItem && p.Reason != meshv1alpha1.DepartureRemoving:
			w.items = append(w.items, p) // stuck: kept until removed by hand
		case hadItem || !inSpec[name]:
			it := departedItem(name, p.Server, meshv1alpha1.DepartureCredentialGone,
				"the server holds no connection to it (its credential left with the entry, or the server restarted meanwhile)", mesh, p, now)
			w.items = append(w.items, it)
			w.events = append(w.events, meshEvent{Type: corev1.EventTypeWarning, Reason: EventDepartureStuck, Message: it.Message})
		}
	}
	return w
}

// departHeld works on one departure whose connection is held.
func (r *Reconciler) departHeld(ctx context.Context, w *departureWork, mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan,
	states map[string]clusters.ClusterState, ids map[string]string, inSpec bool, h clusters.Held,
	p meshv1alpha1.DepartedCluster, hadItem bool, now time.Time) {
	name, st := h.Key.Entry, h.State
	giveUp := h.Deadline.Add(-departureMargin)
	removing := func(msg string) {
		w.items = append(w.items, departedItem(name, h.Server, meshv1alpha1.DepartureRemoving, msg, mesh, p, now))
		w.next = sooner(w.next, settleRecheck)
	}
	if inSpec {
		switch cur := ids[name]; {
		case h.Identity != "" && cur == h.Identity:
			// Other credentials for the same cluster: nothing left.
			r.clusters.Release(h.Key)
			return
		case h.Identity == "" || cur == "":
			if now.Before(giveUp) {
				removing(fmt.Sprintf("entry %s now reaches another connection; waiting to learn whether it is another cluster than %s", name, h.Server))
				return
			}
			// Never known: no delete on a guess.
			r.clusters.Release(h.Key)
			return
		}
	}
	if slices.Contains(slices.Collect(maps.Values(ids)), h.Identity) && h.Identity != "" {
		// The cluster is still a member under another entry: the plan manages it.
		r.clusters.Release(h.Key)
		return
	}
	left := 0
	if usable(st, true) {
		owned := ownedNames(mesh, st)
		if len(owned) > 0 {
			client, err := r.clusters.HeldPeerClient(h.Key)
			if err == nil {
				var n int
				n, err = r.removeOwned(ctx, mesh, name, st.Peers, client)
				klog.InfoS("Removing the Peers of a mesh from a cluster that left it", "mesh", klog.KObj(mesh), "cluster", name, "deleted", n, "err", err)
			}
			if err != nil && !now.Before(giveUp) {
				r.stuck(w, mesh, h, p, meshv1alpha1.DepartureRefused, fmt.Sprintf("removing them failed: %v", err), now)
				return
			}
			left = len(owned)
			w.next = sooner(w.next, cacheRecheck)
		}
	} else {
		reason, why := meshv1alpha1.DepartureUnreachable, "it does not answer"
		if st.Reason == memberaccess.ErrForbidden || st.Reason == memberaccess.ErrUnauthorized {
			reason, why = meshv1alpha1.DepartureRefused, "it refuses the server's credential"
		}
		if st.LastError != "" {
			why += ": " + st.LastError
		}
		if !now.Before(giveUp) {
			r.stuck(w, mesh, h, p, reason, why, now)
			return
		}
		removing(fmt.Sprintf("cannot remove the mesh's Peers from cluster %s yet (%s); retrying until %s", name, why, giveUp.UTC().Format(time.RFC3339)))
		return
	}
	others := peersOfDeparted(mesh, name, inSpec, plan, states)
	if left == 0 && others == 0 {
		// The cache may not show yet the Peers an earlier pass wrote there.
		n, err := r.removeListed(ctx, mesh, h.Key)
		switch {
		case err != nil && !now.Before(giveUp):
			r.stuck(w, mesh, h, p, meshv1alpha1.DepartureRefused, fmt.Sprintf("confirming that it holds no Peer of the mesh failed: %v", err), now)
			return
		case err != nil:
			removing(fmt.Sprintf("confirming that cluster %s holds no Peer of the mesh failed (%v); retrying until %s", name, err, giveUp.UTC().Format(time.RFC3339)))
			return
		}
		left = n
	}
	if left == 0 && others == 0 {
		// Its services objects go within the same hold, confirmed the same way.
		found, err := r.removeServicesHeld(ctx, mesh, h.Key)
		switch {
		case err != nil && !now.Before(giveUp):
			r.stuck(w, mesh, h, p, meshv1alpha1.DepartureRefused, fmt.Sprintf("removing its services objects failed: %v", err), now)
			return
		case err != nil:
			removing(fmt.Sprintf("removing the mesh's services objects from cluster %s failed (%v); retrying until %s", name, err, giveUp.UTC().Format(time.RFC3339)))
			return
		case found > 0:
			removing(fmt.Sprintf("removing %d services objects of the mesh (ServiceImports, derived Services, EndpointSlices) from cluster %s", found, name))
			w.next = sooner(w.next, cacheRecheck)
			return
		}
		r.clusters.Release(h.Key)
		r.departedHere.set(h.Key.Mesh, name, mesh.UID, true, now)
		w.events = append(w.events, meshEvent{Type: corev1.EventTypeNormal, Reason: EventClusterDeparted, Message: fmt.Sprintf(
			"cluster %s (%s) left the mesh: it holds no Peer or services object of the mesh, and no other member holds one of it", name, h.Server)})
		return
	}
	removing(fmt.Sprintf("removing %d Peers of the mesh from cluster %s and %d Peers of it from the other members", left, name, others))
	w.next = sooner(w.next, cacheRecheck)
}

// departureListLimit bounds one live list of a departed cluster's Peers;
// more are removed by the passes that follow.
const departureListLimit = 500

// removeListed lists the Peers of mesh on a held cluster from its API
// server, not its cache, removes them and returns how many it found.
func (r *Reconciler) removeListed(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, key clusters.HoldKey) (int, error) {
	listed, err := r.clusters.HeldPeers(ctx, key, planner.LabelMeshUID+"="+string(mesh.UID), departureListLimit)
	if err != nil {
		return 0, err
	}
	owned := 0
	for _, p := range listed {
		if planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID) {
			owned++
		}
	}
	if owned == 0 {
		return 0, nil
	}
	client, err := r.clusters.HeldPeerClient(key)
	if err != nil {
		return owned, err
	}
	n, err := r.removeOwned(ctx, mesh, key.Entry, listed, client)
	klog.InfoS("Removing the Peers of a mesh its cache did not show from a cluster that left it", "mesh", klog.KObj(mesh), "cluster", key.Entry, "listed", owned, "deleted", n, "err", err)
	return owned, err
}

// stuck gives up on a departure: its connection is let go, and the item
// and an event name what is left and how to remove it by hand.
func (r *Reconciler) stuck(w *departureWork, mesh *meshv1alpha1.ClusterMesh, h clusters.Held, p meshv1alpha1.DepartedCluster, reason, why string, now time.Time) {
	r.clusters.Release(h.Key)
	it := departedItem(h.Key.Entry, h.Server, reason, why, mesh, p, now)
	w.items = append(w.items, it)
	w.events = append(w.events, meshEvent{Type: corev1.EventTypeWarning, Reason: EventDepartureStuck, Message: it.Message})
}

// departedItem builds a status item; a stuck one's message ends with the
// manual step. Its transition time moves only when its reason does.
func departedItem(name, server, reason, why string, mesh *meshv1alpha1.ClusterMesh, prev meshv1alpha1.DepartedCluster, now time.Time) meshv1alpha1.DepartedCluster {
	if server == "" {
		server = prev.Server
	}
	msg := why
	if reason != meshv1alpha1.DepartureRemoving {
		where := "that cluster"
		if server != "" {
			where = "the cluster at " + server
		}
		kinds := "peers.kilo.squat.ai"
		if servicesOnce(mesh) {
			kinds += ",serviceimports.multicluster.x-k8s.io,services,endpointslices -A"
		}
		msg = fmt.Sprintf("gave up removing the mesh's Peers from cluster %s: %s. Remove them by hand on %s: "+
			"kubectl delete %s -l %s=%s; then have a cluster administrator remove this item from status.departedClusters",
			name, why, where, kinds, planner.LabelMeshUID, mesh.UID)
	}
	at := metav1.NewTime(now.Truncate(time.Second))
	if prev.Name == name && prev.Reason == reason {
		at = prev.LastTransitionTime
	}
	return meshv1alpha1.DepartedCluster{Name: name, Server: server, Reason: reason, Message: msg, LastTransitionTime: at}
}

// ownedNames are the Peers of mesh a cluster's cache holds.
func ownedNames(mesh *meshv1alpha1.ClusterMesh, st clusters.ClusterState) []string {
	var out []string
	for _, p := range st.Peers {
		if planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID) {
			out = append(out, p.Name)
		}
	}
	return out
}

// peersOfDeparted counts the Peers of the departed entry's cluster that
// the other members' caches still hold: the mesh's Peers sourced from that
// entry and not desired by the plan (a repointed entry's new cluster is
// desired). Without a plan nothing is known to be gone: 1.
func peersOfDeparted(mesh *meshv1alpha1.ClusterMesh, entry string, inSpec bool, plan *planner.Plan, states map[string]clusters.ClusterState) int {
	if plan == nil {
		return 1
	}
	n := 0
	for cluster, st := range states {
		if cluster == entry && inSpec {
			continue
		}
		desired := map[string]bool{}
		for _, p := range plan.DesiredPeers[cluster].All() {
			desired[p.Name] = true
		}
		for _, p := range st.Peers {
			if planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID) && p.Labels[planner.LabelSourceCluster] == entry && !desired[p.Name] {
				n++
			}
		}
	}
	return n
}

// setDeparturesCondition summarises the departures of st.
func setDeparturesCondition(st *meshv1alpha1.ClusterMeshStatus, gen int64, now metav1.Time) {
	if len(st.DepartedClusters) == 0 {
		setCondition(st, gen, now, meshv1alpha1.ConditionDeparturesComplete, metav1.ConditionTrue, ReasonDeparturesComplete,
			"no cluster that left the mesh holds anything of it")
		return
	}
	reason := meshv1alpha1.DepartureRemoving
	var parts []string
	for _, it := range st.DepartedClusters {
		if it.Reason != meshv1alpha1.DepartureRemoving && reason == meshv1alpha1.DepartureRemoving {
			reason = it.Reason
		}
		parts = append(parts, fmt.Sprintf("%s: %s", it.Name, it.Reason))
	}
	setCondition(st, gen, now, meshv1alpha1.ConditionDeparturesComplete, metav1.ConditionFalse, reason,
		"clusters that left the mesh: "+summarize(parts, 5)+"; see status.departedClusters")
}
