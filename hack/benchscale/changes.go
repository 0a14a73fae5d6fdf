package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/hollow"
	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// measuredMeshes is how many meshes the timed changes go to, in turn; the
// others' nodes churn meanwhile (-churn).
const measuredMeshes = 10

// change is one timed change: a new endpoint of node of member src, which
// alters one Peer of mesh on each of its other members (in location
// granularity the node leads its location).
type change struct {
	mesh      *mesh
	src, node int
}

// group is the Peer group the node's endpoint goes to.
func (b *bench) group(c change) string {
	if b.granularity == string(meshv1alpha1.GranularityFull) {
		return "node:" + hollow.NodeName(c.src, c.node)
	}
	return "location:" + b.fleet.manifest.Layout.Location(c.node)
}

// changeList spreads n changes over the measured meshes, their members and
// their Peers.
func (b *bench) changeList(n int) []change {
	measured := min(len(b.meshes), measuredMeshes)
	locations := b.groups()
	var out []change
	for k := range n {
		m := b.meshes[k%measured]
		c := change{mesh: m, src: m.members[(k/measured)%len(m.members)]}
		if b.granularity == string(meshv1alpha1.GranularityFull) {
			c.node = (k * 97) % b.nodes
		} else {
			c.node = ((k * 7) % locations) * b.perLoc
		}
		out = append(out, c)
	}
	return out
}

// targets are the members of c's mesh other than its source.
func targets(c change) []int {
	var out []int
	for _, i := range c.mesh.members {
		if i != c.src {
			out = append(out, i)
		}
	}
	return out
}

// nextIP is an endpoint no change used before.
func (b *bench) nextIP() string {
	n := b.ipSeq.Add(1)
	return fmt.Sprintf("198.19.%d.%d", (n/256)%256, n%256)
}

// change gives the node a new endpoint, as its kg would, and returns what
// to wait for: the mesh's Peer of it with that endpoint on every other
// member.
func (b *bench) change(ctx context.Context, c change, ip string) ([]<-chan struct{}, error) {
	peer := planner.PeerName(c.mesh.namespace, c.mesh.name, clusterName(c.src), b.group(c))
	var waits []<-chan struct{}
	for _, t := range targets(c) {
		waits = append(waits, b.peers.waitFor(t, peer, ip))
	}
	return waits, b.patchNode(ctx, c.src, c.node, kilov1alpha1.AnnotationEndpoint, ip+":51820")
}

func (b *bench) patchNode(ctx context.Context, member, node int, annotation, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annotation, value)
	_, err := b.fleet.kube[member].CoreV1().Nodes().Patch(ctx, hollow.NodeName(member, node), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// changeFunc makes one change and returns what shows it done.
type changeFunc func(ctx context.Context, c change, ip string) ([]<-chan struct{}, error)

// timeChanges makes the changes one after the other, each timed from its
// write until it shows everywhere.
func (b *bench) timeChanges(ctx context.Context, list []change, do changeFunc) ([]time.Duration, error) {
	var took []time.Duration
	for k, c := range list {
		d, err := b.timeOne(ctx, c, do)
		if err != nil {
			return nil, fmt.Errorf("change %d (member %d, node %d): %w", k, c.src, c.node, err)
		}
		took = append(took, d)
	}
	p50, p99, _ := percentiles(took)
	log.Printf("%d changes: p50 %s, p99 %s", len(took), p50, p99)
	return took, nil
}

func (b *bench) timeOne(ctx context.Context, c change, do changeFunc) (time.Duration, error) {
	start := time.Now()
	waits, err := do(ctx, c, b.nextIP())
	if err != nil {
		return 0, err
	}
	timeout := time.After(2 * time.Minute)
	for _, w := range waits {
		select {
		case <-w:
		case <-timeout:
			return 0, fmt.Errorf("not on every member within 2 minutes")
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return time.Since(start), nil
}

// burstChanges makes -burst changes of distinct Peers spread evenly over
// one second, each timed until it is everywhere.
func (b *bench) burstChanges(ctx context.Context) ([]time.Duration, error) {
	list := b.distinctChanges(b.burst)
	took := make([]time.Duration, len(list))
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for k, c := range list {
		wg.Go(func() {
			time.Sleep(time.Duration(k) * time.Second / time.Duration(len(list)))
			took[k], errs[k] = b.timeOne(ctx, c, b.change)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("burst: %w", err)
		}
	}
	return took, nil
}

// distinctChanges are n changes of n distinct Peers of the first mesh.
func (b *bench) distinctChanges(n int) []change {
	m := b.meshes[0]
	var out []change
	for k := 0; len(out) < n && k < len(m.members)*b.groups(); k++ {
		c := change{mesh: m, src: m.members[k%len(m.members)], node: (k / len(m.members)) * 53 % b.nodes}
		if b.granularity != string(meshv1alpha1.GranularityFull) {
			c.node = (k / len(m.members)) * b.perLoc
		}
		if !slices.ContainsFunc(out, func(o change) bool { return o.src == c.src && o.node == c.node }) {
			out = append(out, c)
		}
	}
	return out
}

// startChurn changes endpoints of the members outside the measured meshes,
// -churn a second, until the returned function is called.
func (b *bench) startChurn(ctx context.Context) (stop func()) {
	if b.churn <= 0 {
		return func() {}
	}
	measured := map[int]bool{}
	for _, m := range b.meshes[:min(len(b.meshes), measuredMeshes)] {
		for _, i := range m.members {
			measured[i] = true
		}
	}
	var pool []int
	for i := range b.members {
		if !measured[i] {
			pool = append(pool, i)
		}
	}
	if len(pool) == 0 {
		log.Printf("-churn: every member is in a measured mesh; no churn")
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Duration(float64(time.Second) / b.churn))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			i := pool[rand.IntN(len(pool))]
			node := rand.IntN(b.groups()) * b.perLoc
			if b.granularity == string(meshv1alpha1.GranularityFull) {
				node = rand.IntN(b.nodes)
			}
			ip := fmt.Sprintf("198.20.%d.%d:51820", (n/256)%256, n%256)
			if err := b.patchNode(ctx, i, node, kilov1alpha1.AnnotationEndpoint, ip); err != nil && ctx.Err() == nil {
				log.Printf("churn: %v", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// percentiles returns the p50, p99 and maximum of some durations.
func percentiles(took []time.Duration) (p50, p99, worst time.Duration) {
	if len(took) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(took)
	slices.Sort(s)
	pct := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return pct(0.5), pct(0.99), s[len(s)-1]
}
