package dataplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// RecoveryBound is how long traffic may take to flow again after a change.
// WireGuard alone may take KEEPALIVE_TIMEOUT + REKEY_TIMEOUT + jitter
// (15.33 s) when one end keeps a session the other lost (see measure), so
// the bound is that plus room for the Peer writes and the agents.
const RecoveryBound = 20 * time.Second

// Recovery is how long one change took to carry traffic again, from the
// Node change (the first patch) on.
type Recovery struct {
	What string
	// Ours is until the changed Peer showed on the last of the other
	// clusters (our server's part: watch, plan, apply).
	Ours time.Duration
	// Total is until the last probed pair was answered.
	Total time.Duration
	// Slowest is that last pair.
	Slowest Pair
}

// Agents is the agents' and WireGuard's part: from the Peers being updated
// to the first packets through.
func (r Recovery) Agents() time.Duration { return r.Total - r.Ours }

func (r Recovery) String() string {
	return fmt.Sprintf("%s: ours %s, agents+WireGuard %s, total %s (last: %s)", r.What,
		fmtDuration(r.Ours), fmtDuration(r.Agents()), fmtDuration(r.Total), r.Slowest)
}

// RotateKey gives leader n a new key as Kilo does it (kg restarts with a
// new key, then writes it to its Node) and measures the recovery of the
// traffic between n's group and the other clusters.
func (b *Bed) RotateKey(ctx context.Context, n *Node) (Recovery, error) {
	pub, err := b.setPrivateKey(ctx, n)
	if err != nil {
		return Recovery{}, err
	}
	return b.measure(ctx, "key rotation of "+n.Name, n, func(p *kilov1alpha1.Peer) bool {
		return p.Spec.PublicKey == pub
	}, func(ctx context.Context) error {
		return b.patchAnnotations(ctx, n, map[string]*string{
			kilov1alpha1.AnnotationKey:      &pub,
			kilov1alpha1.AnnotationLastSeen: touch(),
		})
	})
}

// MoveLeader makes to the leader of its location instead of from, as an
// operator moving the leader annotation and kg following it would: from
// loses the leader annotation and its WireGuard IP, then to gains both. It
// measures the recovery of the traffic between the location and the other
// clusters.
func (b *Bed) MoveLeader(ctx context.Context, from, to *Node) (Recovery, error) {
	node, err := b.Env.Client(from.Cluster, framework.UserAdmin).CoreV1().Nodes().Get(ctx, from.Name, metav1.GetOptions{})
	if err != nil {
		return Recovery{}, err
	}
	wgIP := node.Annotations[kilov1alpha1.AnnotationWireGuardIP]
	if wgIP == "" {
		return Recovery{}, fmt.Errorf("%s does not lead: no %s", from.Name, kilov1alpha1.AnnotationWireGuardIP)
	}
	endpoint := to.Underlay.String()
	return b.measure(ctx, fmt.Sprintf("leader change %s -> %s", from.Name, to.Name), to, func(p *kilov1alpha1.Peer) bool {
		return p.Spec.PublicKey == to.PublicKey() && p.Spec.Endpoint != nil && p.Spec.Endpoint.DNSOrIP.IP == endpoint
	}, func(ctx context.Context) error {
		if err := b.patchAnnotations(ctx, from, map[string]*string{
			kilov1alpha1.AnnotationLeader:      nil,
			kilov1alpha1.AnnotationWireGuardIP: ptr(""),
		}); err != nil {
			return err
		}
		return b.patchAnnotations(ctx, to, map[string]*string{
			kilov1alpha1.AnnotationLeader:      ptr("true"),
			kilov1alpha1.AnnotationWireGuardIP: &wgIP,
		})
	})
}

// measure makes change and times it: until the Peer of n's group satisfies
// done on every other cluster of the mesh, and until every pod pair between
// n's group and the other clusters, both ways, answers.
//
// Now and then both WireGuard ends of a pair start a handshake within one
// round trip of each other (both have packets waiting, and both learnt the
// new key or endpoint within milliseconds). Crossed handshakes both fail;
// each end tries again with its next packet after 5 s (REKEY_TIMEOUT), or,
// in a variant where one end believes it holds a session, after 15 s of
// not hearing back. That is WireGuard's protocol, not a part of ours; it
// shows as the 5 s outliers of docs/performance.md. Timing one direction
// only does not avoid it: answers and packets in flight during the change
// still start handshakes from the other end.
func (b *Bed) measure(ctx context.Context, what string, n *Node, done func(*kilov1alpha1.Peer) bool, change func(context.Context) error) (Recovery, error) {
	r := Recovery{What: what}
	name := b.PeerName(n)
	var group []*Node
	for _, m := range b.ClusterNodes(n.Cluster) {
		if b.Group(m) == b.Group(n) {
			group = append(group, m)
		}
	}
	pairs := Both(group, b.Others(n.Cluster))
	ctx, cancel := context.WithTimeout(ctx, RecoveryBound+5*time.Second)
	defer cancel()

	// Watches start before the change, so no update is missed.
	var watchers []watch.Interface
	defer func() {
		for _, w := range watchers {
			w.Stop()
		}
	}()
	for _, i := range b.MeshClusters() {
		if i == n.Cluster {
			continue
		}
		w, err := b.watchPeer(ctx, i, name)
		if err != nil {
			return r, err
		}
		watchers = append(watchers, w)
	}

	t0 := time.Now()
	if err := change(ctx); err != nil {
		return r, err
	}
	var wg sync.WaitGroup
	peerErrs := make([]error, len(watchers))
	peerAt := make([]time.Time, len(watchers))
	for k, w := range watchers {
		wg.Go(func() { peerAt[k], peerErrs[k] = waitPeer(ctx, w, done) })
	}
	results := probeAll(pairs, probeOptions{Until: t0.Add(RecoveryBound), Interval: 50 * time.Millisecond})
	wg.Wait()
	if err := errors.Join(peerErrs...); err != nil {
		return r, fmt.Errorf("%s: Peer %s not updated everywhere: %w", what, name, err)
	}
	for _, at := range peerAt {
		r.Ours = max(r.Ours, at.Sub(t0))
	}
	if failed := Failed(results); len(failed) > 0 {
		return r, fmt.Errorf("%s: no traffic within %s for %d of %d pairs:\n%s", what, RecoveryBound, len(failed), len(results), DescribeFailures(failed))
	}
	for _, res := range results {
		if d := res.First.Sub(t0); d > r.Total {
			r.Total, r.Slowest = d, res.Pair
		}
	}
	return r, nil
}

// watchPeer watches Peer name on cluster i from now on.
func (b *Bed) watchPeer(ctx context.Context, i int, name string) (watch.Interface, error) {
	res := b.Env.Dynamic(i, framework.UserAdmin).Resource(kilov1alpha1.PeerResource)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := res.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	return res.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.GetResourceVersion()})
}

// waitPeer returns when an event of w shows a Peer satisfying done.
func waitPeer(ctx context.Context, w watch.Interface, done func(*kilov1alpha1.Peer) bool) (time.Time, error) {
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return time.Time{}, errors.New("watch closed")
			}
			at := time.Now()
			u, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj || ev.Type == watch.Deleted {
				continue
			}
			p := &kilov1alpha1.Peer{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
				return time.Time{}, err
			}
			if done(p) {
				return at, nil
			}
		}
	}
}

// RecoveryStats sums recoveries up: median and worst of each part.
func RecoveryStats(rs []Recovery) string {
	if len(rs) == 0 {
		return "no runs"
	}
	stat := func(f func(Recovery) time.Duration) string {
		var ds []time.Duration
		for _, r := range rs {
			ds = append(ds, f(r))
		}
		slices.Sort(ds)
		return fmt.Sprintf("median %s, max %s", fmtDuration(ds[len(ds)/2]), fmtDuration(ds[len(ds)-1]))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs\n", len(rs))
	fmt.Fprintf(&b, "  ours (Node change -> Peer updated on the other clusters): %s\n", stat(func(r Recovery) time.Duration { return r.Ours }))
	fmt.Fprintf(&b, "  agents + WireGuard (Peer updated -> first packets through): %s\n", stat(Recovery.Agents))
	fmt.Fprintf(&b, "  total (Node change -> first packets through, every pair): %s\n", stat(func(r Recovery) time.Duration { return r.Total }))
	return b.String()
}

// Recoveries times runs key rotations and runs leader changes, alternately,
// in location a of cluster 1: the leader's key is rotated, then the
// leadership moves to the other node of the location, whose key is rotated
// next. Each result goes to logf as it comes.
func (b *Bed) Recoveries(ctx context.Context, runs int, logf func(string, ...any)) (rotations, changes []Recovery, err error) {
	leader, member := b.Node("c1-a1"), b.Node("c1-a2")
	for range runs {
		r, err := b.RotateKey(ctx, leader)
		if err != nil {
			return rotations, changes, err
		}
		logf("%s", r)
		rotations = append(rotations, r)
		if r, err = b.MoveLeader(ctx, leader, member); err != nil {
			return rotations, changes, err
		}
		logf("%s", r)
		changes = append(changes, r)
		leader, member = member, leader
	}
	return rotations, changes, nil
}
