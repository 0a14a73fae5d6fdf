package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// writeParallelism bounds the concurrent writes through one connection,
// whatever the meshes: enough to create thousands of Peers quickly, few
// enough not to crowd out the cluster's other clients (the client's rate
// limiter applies on top).
const writeParallelism = 16

// targetWork is what one pass must do on one target cluster.
type targetWork struct {
	mesh    *meshv1alpha1.ClusterMesh
	cluster string
	target  *meshv1alpha1.TargetPlan
	desired planner.PeerList // the plan's: read-only
	// cached is what the member-cluster cache holds now, by name; it is
	// read after planning, so it is at least as recent as the plan.
	cached map[string]*kilov1alpha1.Peer
	client clusters.PeerClient
	// written remembers this replica's writes (nil: nothing is remembered).
	written *writtenPeers
	// writer runs the writes, in turns with those of other meshes.
	writer *fairWriter
}

// targetResult is what one pass did on one target cluster.
type targetResult struct {
	targetOutcome
	created, updated, deleted int
	events                    []meshEvent
	// unseen is set when a write the plan asked for had been made by an
	// earlier pass, and the cache has not seen it yet: the mesh is looked
	// at again shortly.
	unseen bool
	// writes were handed to the writer, all of them by handed; the last
	// was answered at answered.
	writes           int
	handed, answered time.Time
}

// applyTarget writes the Peers the plan creates or updates and deletes the
// managed Peers it drops, on one target cluster, and counts the desired
// Peers that exist as planned afterwards. Every write is preceded by an
// ownership check against the cache; a Peer someone else owns is reported
// and left alone.
func applyTarget(ctx context.Context, w targetWork) targetResult {
	p := newTargetPass(ctx, w)
	p.applyDesired()
	p.deleteOwned(w.target.Delete)
	return p.wait()
}

// targetPass is one pass of writes on one target cluster, for a plan's
// changes and for the removal of a deleted mesh's Peers alike; the fair
// writer runs them.
type targetPass struct {
	targetWork
	ctx context.Context
	// pending counts the writes submitted and not finished; each write
	// records its own outcome.
	pending sync.WaitGroup
	// A cluster that stops answering mid-pass would make every remaining
	// write wait for its timeout: the first failure without an answer from
	// the API server stops the pass on that cluster.
	unreachable atomic.Bool
	skipped     atomic.Int64

	mu  sync.Mutex
	res targetResult
}

func newTargetPass(ctx context.Context, w targetWork) *targetPass {
	return &targetPass{targetWork: w, ctx: ctx, res: targetResult{targetOutcome: targetOutcome{reconciled: true}}}
}

// write hands f to the fair writer, to run unless the cluster stopped
// answering or the pass was cancelled meanwhile.
func (p *targetPass) write(f func() error) {
	p.res.writes++
	p.pending.Add(1)
	p.writer.submit(p.client.Connection(), p.meshKey(), func() {
		defer p.pending.Done()
		if p.unreachable.Load() || p.ctx.Err() != nil {
			p.skipped.Add(1)
			return
		}
		var status apierrors.APIStatus
		if err := f(); err != nil && !errors.As(err, &status) {
			p.unreachable.Store(true)
		}
	})
}

func (p *targetPass) record(f func(*targetResult)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.res)
}

// applyDesired applies the desired Peers the plan creates or updates.
func (p *targetPass) applyDesired() {
	names := slices.Clone(p.target.Create)
	for _, u := range p.target.Update {
		names = append(names, u.Name)
		klog.V(4).InfoS("Peer differs from the plan", "cluster", p.cluster, "peer", u.Name, "fields", u.Fields)
	}
	slices.Sort(names)
	// Most of a target's Peers are as planned: they are counted, not
	// recorded one by one, and those to write are looked up by name.
	asPlanned := p.desired.Len()
	defer func() { p.record(func(r *targetResult) { r.applied += int32(asPlanned) }) }()
	for _, name := range slices.Compact(names) {
		want, ok := planner.FindPeer(p.desired, name)
		if !ok {
			continue
		}
		asPlanned--
		have := p.cached[want.Name]
		if have != nil && !p.owns(have) {
			p.record(func(r *targetResult) { r.events = append(r.events, nameTaken(p.cluster, want.Name)) })
			continue
		}
		if p.skipDone(want.Name, want, have) {
			continue
		}
		p.write(func() error {
			key, conn := p.key(want.Name), p.client.Connection()
			p.written.begin(key, conn, want)
			n, after, err := applyPeer(p.ctx, p.client, want, have)
			p.count("apply", n, err)
			if err == nil {
				if p.written.remember(key, conn, want, resourceVersion(have), after) {
					confirmedEarly()
				}
			} else {
				p.written.abandon(key, conn)
			}
			p.record(func(r *targetResult) {
				switch {
				case err == nil:
					r.applied++
					if have == nil {
						r.created++
					} else {
						r.updated++
					}
				case apierrors.IsConflict(err) && have == nil:
					// Created meanwhile by someone else, with other values:
					// the apply without force refused to take it over.
					r.events = append(r.events, nameTaken(p.cluster, want.Name))
				default:
					r.errors = append(r.errors, fmt.Sprintf("applying Peer %s: %v", want.Name, err))
				}
			})
			return err
		})
	}
}

// deleteOwned deletes the named Peers that the cache shows as the mesh's;
// a name gone already, or no longer the mesh's, is left alone.
func (p *targetPass) deleteOwned(names []string) {
	for _, name := range names {
		have := p.cached[name]
		if have == nil || !p.owns(have) || p.skipDone(name, nil, have) {
			continue
		}
		p.write(func() error {
			err := deletePeer(p.ctx, p.client, name, have.UID)
			p.count("delete", 1, err)
			if err == nil {
				p.written.remember(p.key(name), p.client.Connection(), nil, have.ResourceVersion, "")
			}
			p.record(func(r *targetResult) {
				if err != nil {
					r.errors = append(r.errors, fmt.Sprintf("deleting Peer %s: %v", name, err))
					return
				}
				r.deleted++
			})
			return err
		})
	}
}

// skipDone reports whether the write of want (nil: the delete) of Peer
// name was made by an earlier pass that the cache, and so the plan, has not
// caught up with; such a Peer counts as planned.
func (p *targetPass) skipDone(name string, want, have *kilov1alpha1.Peer) bool {
	done, seen := p.written.done(p.key(name), p.client.Connection(), want, have)
	if done {
		p.record(func(r *targetResult) {
			if want != nil {
				r.applied++
			}
			r.unseen = r.unseen || !seen
		})
	}
	return done
}

func (p *targetPass) key(peer string) writtenPeerKey {
	return writtenPeerKey{mesh: p.meshKey(), cluster: p.cluster, peer: peer}
}

func (w targetWork) meshKey() types.NamespacedName {
	return types.NamespacedName{Namespace: w.mesh.Namespace, Name: w.mesh.Name}
}

func resourceVersion(p *kilov1alpha1.Peer) string {
	if p == nil {
		return ""
	}
	return p.ResourceVersion
}

// wait waits for the pass's writes and returns what they did. The pass's
// worker is free for other meshes meanwhile.
func (p *targetPass) wait() targetResult {
	if p.res.writes > 0 {
		p.res.handed = time.Now()
	}
	releaseWorker(p.ctx)
	p.pending.Wait()
	if p.res.writes > 0 {
		p.res.answered = time.Now()
	}
	// Writes finish in any order; the status and events need a stable one.
	slices.Sort(p.res.errors)
	if n := p.skipped.Load(); n > 0 {
		p.res.errors = append(p.res.errors, fmt.Sprintf("%d more writes not attempted: the cluster stopped answering", n))
	}
	return p.res
}

func (w targetWork) owns(p *kilov1alpha1.Peer) bool {
	return planner.IsManagedBy(p, w.mesh.Namespace, w.mesh.Name, w.mesh.UID)
}

// count feeds writes into the metrics.
func (w targetWork) count(op string, writes int, err error) {
	mesh := w.mesh.Namespace + "/" + w.mesh.Name
	peerWrites.WithLabelValues(mesh, w.cluster, op).Add(float64(writes))
	if err != nil {
		applyErrors.WithLabelValues(mesh, w.cluster).Inc()
	}
}

func nameTaken(cluster, name string) meshEvent {
	return meshEvent{
		Type:    corev1.EventTypeWarning,
		Reason:  EventPeerConflict,
		Message: fmt.Sprintf("cluster %s: Peer %s exists and is not managed by this mesh; left as it is", cluster, name),
	}
}

// applyPeer server-side-applies want. A Peer the mesh owns (have) is
// applied with force and its UID as precondition, so that a Peer deleted and
// recreated by someone else meanwhile is not taken over. A new Peer is
// applied without force: should someone have created it meanwhile with
// other values, the apply fails with a conflict instead of overwriting it.
//
// An apply configuration cannot say "absent": a keepalive or endpoint that
// someone else set on a Peer that must have none survives the apply. The
// apply's answer says whether the live Peer holds one; such fields are then
// removed from it with an update, at the resourceVersion the apply left.
func applyPeer(ctx context.Context, client clusters.PeerClient, want *kilov1alpha1.Peer, have *kilov1alpha1.Peer) (writes int, resourceVersion string, err error) {
	opts := metav1.ApplyOptions{FieldManager: FieldManager}
	if have != nil {
		// The plan's Peers share storage between targets: copy before setting.
		want = want.DeepCopy()
		want.UID = have.UID
		opts.Force = true
	}
	applied, err := client.Apply(ctx, want, opts)
	if err != nil {
		return 1, "", err
	}
	keepalive, endpoint := strays(want, applied.Keepalive, applied.Endpoint)
	if !keepalive && !endpoint {
		return 1, applied.ResourceVersion, nil
	}
	live, err := applied.Live()
	if err != nil {
		return 1, "", err
	}
	updated, err := client.Update(ctx, withoutStrays(live, keepalive, endpoint), metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return 2, "", err
	}
	return 2, updated.ResourceVersion, nil
}

// strays says which of the optional fields a live Peer holds (keepalive,
// endpoint) want leaves out.
func strays(want *kilov1alpha1.Peer, keepalive, endpoint bool) (strayKeepalive, strayEndpoint bool) {
	return keepalive && want.Spec.PersistentKeepalive == 0, endpoint && want.Spec.Endpoint == nil
}

// withoutStrays returns a copy of live without the fields strays named.
func withoutStrays(live *kilov1alpha1.Peer, keepalive, endpoint bool) *kilov1alpha1.Peer {
	fixed := live.DeepCopy()
	if keepalive {
		fixed.Spec.PersistentKeepalive = 0
	}
	if endpoint {
		fixed.Spec.Endpoint = nil
	}
	return fixed
}

// deletePeer deletes a managed Peer, only if it is still the object the
// cache showed; a Peer already gone counts as deleted.
func deletePeer(ctx context.Context, client clusters.PeerClient, name string, uid types.UID) error {
	err := client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if apierrors.IsConflict(err) {
		klog.V(2).InfoS("Peer replaced since it was cached; not deleted", "peer", name)
		return nil
	}
	return err
}
