package reconciler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// Leaving. An entry leaves a mesh when it is removed from spec.clusters or
// reaches another cluster than before (its Secret replaced). The member
// caches hold its old connection (clusters.HoldDeparted) so that, while the
// cluster answers, what the mesh wrote there is removed (cleanup); the plan removes the
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

// DepartureHold is how long the member caches hold the connection of a
// departed entry or a deleted mesh (clusters.Manager.KeepFor) for these
// options.
func DepartureHold(o Options) time.Duration { return o.MeshDeletionTimeout + departureMargin }

// departureWork is what one pass found of the departures of a mesh.
type departureWork struct {
	items  []meshv1alpha1.DepartedCluster
	events []meshEvent
	next   time.Duration
}

// settleDepartures works on every entry that left mesh: it removes what
// the mesh wrote from the departed clusters it still holds, and reports
// what is not done yet. plan and members are this pass's (plan may be nil).
func (r *Reconciler) settleDepartures(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan,
	members map[string]clusters.Member, now time.Time) departureWork {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	inSpec := map[string]bool{}
	for _, e := range mesh.Spec.Clusters {
		inSpec[e.Name] = true
	}
	prev := map[string]meshv1alpha1.DepartedCluster{}
	for _, it := range mesh.Status.DepartedClusters {
		prev[it.Name] = it
	}
	held := map[string]clusters.Member{}
	for _, mb := range r.departedHolds(mesh) {
		held[mb.Entry] = mb
	}
	if !r.clusters.Settled(mesh) {
		// The connections followed a newer spec, or a member's caches began
		// filling again, during this pass: judged now, a hold of an entry
		// this spec still lists could read as not left and be let go. The
		// next settled pass decides.
		return departureWork{items: slices.Clone(mesh.Status.DepartedClusters), next: settleRecheck}
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
	d := departure{mesh: mesh, plan: plan, members: members, now: now}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		p, hadItem := prev[name]
		h, isHeld := held[name]
		switch {
		case !isHeld && r.departedHere.has(key, name, mesh.UID):
			// Done here; the cache shows a status from before.
		case isHeld:
			r.departedHere.set(key, name, mesh.UID, false, now)
			d.held, d.prev, d.inSpec = h, p, inSpec[name]
			if r.departHeld(ctx, &d) {
				r.clusters.Release(h.Hold.Key)
			}
		case hadItem && p.Reason != meshv1alpha1.DepartureRemoving:
			d.items = append(d.items, p) // stuck: kept until removed by hand
		case hadItem || !inSpec[name]:
			it := departedItem(name, p.Server, meshv1alpha1.DepartureCredentialGone,
				"the server holds no connection to it (its credential left with the entry, or the server restarted meanwhile)", mesh, p, now)
			d.items = append(d.items, it)
			d.events = append(d.events, meshEvent{Type: corev1.EventTypeWarning, Reason: EventDepartureStuck, Message: it.Message})
		}
	}
	return d.departureWork
}

// departedHolds are the held connections of the entries that left mesh.
func (r *Reconciler) departedHolds(mesh *meshv1alpha1.ClusterMesh) []clusters.Member {
	var out []clusters.Member
	for _, mb := range r.clusters.Held(types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}) {
		if mb.Hold.Key.Why == clusters.HoldDeparted && mb.Hold.Key.UID == mesh.UID {
			out = append(out, mb)
		}
	}
	return out
}

// departure is one pass's work on the departures of a mesh: its inputs,
// the departure at hand (held, prev, inSpec) and what the pass found.
type departure struct {
	departureWork
	mesh    *meshv1alpha1.ClusterMesh
	plan    *planner.Plan
	members map[string]clusters.Member
	now     time.Time

	held   clusters.Member
	prev   meshv1alpha1.DepartedCluster
	inSpec bool
}

// giveUp is when the departure at hand stops being worked on: the
// reconciler's deadline, before the hold's.
func (d *departure) giveUp() time.Time { return d.held.Hold.Deadline.Add(-departureMargin) }

// removing records the departure at hand as still under way.
func (d *departure) removing(msg string, next time.Duration) {
	d.items = append(d.items, departedItem(d.held.Entry, d.held.Server(), meshv1alpha1.DepartureRemoving, msg, d.mesh, d.prev, d.now))
	d.next = sooner(d.next, next)
}

// departHeld works on one departure whose connection is held; it
// reports whether the connection may go: the departure is done, or given
// up.
func (r *Reconciler) departHeld(ctx context.Context, d *departure) bool {
	h, name := d.held, d.held.Entry
	switch left(d) {
	case leftNot:
		return true
	case leftUnknown:
		d.removing(fmt.Sprintf("entry %s now reaches another connection; waiting to learn whether it is another cluster than %s", name, h.Server()), settleRecheck)
		return false
	}
	giveUp := d.giveUp()
	if !usable(h.State, true) {
		reason, why := meshv1alpha1.DepartureUnreachable, "it does not answer"
		if h.State.Reason == memberaccess.ErrForbidden || h.State.Reason == memberaccess.ErrUnauthorized {
			reason, why = meshv1alpha1.DepartureRefused, "it refuses the server's credential"
		}
		if h.State.LastError != "" {
			why += ": " + h.State.LastError
		}
		if !d.now.Before(giveUp) {
			d.stuck(reason, why)
			return true
		}
		d.removing(fmt.Sprintf("cannot remove the mesh's Peers from cluster %s yet (%s); retrying until %s", name, why, giveUp.UTC().Format(time.RFC3339)), settleRecheck)
		return false
	}
	res := r.cleanup(ctx, d.mesh, h, r.writtenBy(d.mesh))
	others := peersOfDeparted(d.mesh, name, d.inSpec, d.plan, d.members)
	switch {
	case res.err != nil && !d.now.Before(giveUp):
		d.stuck(meshv1alpha1.DepartureRefused, fmt.Sprintf("removing them failed: %v", res.err))
		return true
	case res.err != nil:
		d.removing(fmt.Sprintf("removing the mesh's Peers and services objects from cluster %s failed (%v); retrying until %s",
			name, res.err, giveUp.UTC().Format(time.RFC3339)), settleRecheck)
		return false
	case res.more || others > 0:
		d.removing(fmt.Sprintf("removing %d Peers and services objects of the mesh from cluster %s and %d Peers of it from the other members",
			res.found, name, others), cacheRecheck)
		return false
	}
	r.departedHere.set(h.Hold.Key.Mesh, name, d.mesh.UID, true, d.now)
	d.events = append(d.events, meshEvent{Type: corev1.EventTypeNormal, Reason: EventClusterDeparted, Message: fmt.Sprintf(
		"cluster %s (%s) left the mesh: it holds no Peer or services object of the mesh, and no other member holds one of it", name, h.Server())})
	return true
}

// Whether the held connection of a departure reaches a cluster the mesh left.
const (
	leftCluster = iota
	// leftNot: the mesh still reaches it, through the entry's new
	// credentials or another entry; it is the plan's. Also an entry whose
	// new connection was never known by the time the departure gives up:
	// nothing is deleted on a guess.
	leftNot
	// leftUnknown: the entry reaches a connection not known yet.
	leftUnknown
)

// left says whether the departure at hand left its cluster.
func left(d *departure) int {
	identity := d.held.State.Identity
	if d.inSpec {
		switch cur := d.members[d.held.Entry].State.Identity; {
		case identity != "" && cur == identity:
			return leftNot
		case identity == "" || cur == "":
			if d.now.Before(d.giveUp()) {
				return leftUnknown
			}
			return leftNot
		}
	}
	for _, mb := range d.members {
		if identity != "" && mb.State.Identity == identity {
			return leftNot
		}
	}
	return leftCluster
}

// stuck gives up on the departure at hand: the item and an event name
// what is left and how to remove it by hand.
func (d *departure) stuck(reason, why string) {
	it := departedItem(d.held.Entry, d.held.Server(), reason, why, d.mesh, d.prev, d.now)
	d.items = append(d.items, it)
	d.events = append(d.events, meshEvent{Type: corev1.EventTypeWarning, Reason: EventDepartureStuck, Message: it.Message})
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

// peersOfDeparted counts the Peers of the departed entry's cluster that
// the other members' caches still hold: the mesh's Peers sourced from that
// entry and not desired by the plan (a repointed entry's new cluster is
// desired). Without a plan nothing is known to be gone: 1.
func peersOfDeparted(mesh *meshv1alpha1.ClusterMesh, entry string, inSpec bool, plan *planner.Plan, members map[string]clusters.Member) int {
	if plan == nil {
		return 1
	}
	n := 0
	for cluster, mb := range members {
		st := mb.State
		if cluster == entry && inSpec {
			continue
		}
		desired := map[string]bool{}
		for _, p := range plan.DesiredPeers[cluster].All() {
			desired[p.Name] = true
		}
		for _, p := range st.Peers.All() {
			if planner.IsManagedBy(p, mesh.Namespace, mesh.Name, mesh.UID) && p.Labels[planner.LabelSourceCluster] == entry && !desired[p.Name] {
				n++
			}
		}
	}
	return n
}

// maxDepartedRemembered bounds the completed departures remembered per
// mesh (the validation limit of spec.clusters, so that a mesh whose every
// entry leaves at once forgets none), so that a tenant editing entries in
// and out cannot grow this memory without bound.
const maxDepartedRemembered = validation.MaxClusters

// departedHere remembers the departures this process completed, by mesh
// and entry: the mesh cache may still show a status from before the
// completion, whose Removing item must not then read as a lost connection.
// An entry is needed only while that status may show; settleDepartures
// drops the others (keep), and the oldest goes past maxDepartedRemembered.
type departedHere struct {
	mu   sync.Mutex
	done map[types.NamespacedName]map[string]departedAt
	// forgotten counts the entries dropped for the bound, for the log.
	forgotten int
}

type departedAt struct {
	uid types.UID
	at  time.Time
}

func (d *departedHere) set(key types.NamespacedName, entry string, uid types.UID, done bool, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !done {
		delete(d.done[key], entry)
		return
	}
	if d.done == nil {
		d.done = map[types.NamespacedName]map[string]departedAt{}
	}
	m := d.done[key]
	if m == nil {
		m = map[string]departedAt{}
		d.done[key] = m
	}
	if _, ok := m[entry]; !ok && len(m) >= maxDepartedRemembered {
		oldest := ""
		for name, v := range m {
			if oldest == "" || v.at.Before(m[oldest].at) || v.at.Equal(m[oldest].at) && name < oldest {
				oldest = name
			}
		}
		delete(m, oldest)
		d.forgotten++
		klog.InfoS("Forgot a completed departure to bound memory; if the mesh cache still shows it Removing, it reads CredentialGone",
			"mesh", key, "cluster", oldest, "limit", maxDepartedRemembered, "forgotten", d.forgotten)
	}
	m[entry] = departedAt{uid: uid, at: now}
}

func (d *departedHere) has(key types.NamespacedName, entry string, uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.done[key][entry]
	return ok && v.uid == uid
}

// keep drops the entries of key that names (what the mesh's status and
// holds still show of its departures) does not hold: nothing can be
// mistaken for them any more.
func (d *departedHere) keep(key types.NamespacedName, names map[string]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for entry := range d.done[key] {
		if !names[entry] {
			delete(d.done[key], entry)
		}
	}
	if len(d.done[key]) == 0 {
		delete(d.done, key)
	}
}

func (d *departedHere) forget(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.done, key)
}
