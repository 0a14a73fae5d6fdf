package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// burst changes the endpoints of n nodes of the remote clusters, spread
// evenly over one second, and times each until its Peer carries the new
// endpoint on every other cluster, through watches opened before.
func (b *bench) burst(ctx context.Context, n int) (p50, p99, worst time.Duration, err error) {
	if b.granularity != string(meshv1alpha1.GranularityFull) {
		return 0, 0, 0, fmt.Errorf("-burst needs -granularity=Full: one Peer per node")
	}
	type change struct {
		cluster int
		node    int
		peer    string
		at      time.Time
		missing int // clusters that have not shown it yet
		took    time.Duration
	}
	var mu sync.Mutex
	byEndpoint := map[string]*change{}
	changes := make([]*change, n)
	for k := range n {
		cluster := 1 + k%(b.clusters-1)
		j := (k*131 + 7) % b.nodes
		changes[k] = &change{cluster: cluster, node: j, peer: planner.PeerName(namespace, meshName, clusterName(cluster), "node:"+nodeName(cluster, j)), missing: b.clusters - 1}
		byEndpoint[fmt.Sprintf("198.21.%d.%d", k/256, k%256)] = changes[k]
	}
	var watches []watch.Interface
	stopped := make(chan struct{})
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		close(stopped)
		for _, w := range watches {
			w.Stop()
		}
	}()
	done := make(chan struct{})
	closed := make(chan int, b.clusters)
	remaining := n
	for i := range b.clusters {
		// From the current resourceVersion: a watch without one starts with
		// an event per existing Peer (thousands), which the changes' events
		// would queue behind.
		sel := planner.LabelMeshUID + "=" + string(b.uid)
		list, err := b.meta[i].List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 1})
		if err != nil {
			return 0, 0, 0, err
		}
		w, err := b.peers[i].Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
		if err != nil {
			return 0, 0, 0, err
		}
		mu.Lock()
		watches = append(watches, w)
		mu.Unlock()
		go func() {
			rv := list.ResourceVersion
			for {
				for ev := range w.ResultChan() {
					u, ok := ev.Object.(*unstructured.Unstructured)
					if !ok {
						continue
					}
					rv = u.GetResourceVersion()
					ip, _, _ := unstructured.NestedString(u.Object, "spec", "endpoint", "dnsOrIP", "ip")
					mu.Lock()
					c := byEndpoint[ip]
					if c != nil && c.peer == u.GetName() && c.cluster != i && !c.at.IsZero() && c.missing > 0 {
						if c.missing--; c.missing == 0 {
							c.took = time.Since(c.at)
							if remaining--; remaining == 0 {
								close(done)
							}
						}
					}
					mu.Unlock()
				}
				// A loaded API server closes watches: go on from the last
				// event seen, so that no change goes unseen.
				select {
				case <-done:
					return
				case <-stopped:
					return
				case <-time.After(100 * time.Millisecond):
				}
				var err error
				if w, err = b.peers[i].Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv}); err != nil {
					closed <- i
					return
				}
				mu.Lock()
				select {
				case <-stopped:
					w.Stop()
				default:
					watches = append(watches, w)
				}
				mu.Unlock()
			}
		}()
	}
	tick := time.NewTicker(time.Second / time.Duration(n))
	defer tick.Stop()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for ip, c := range byEndpoint {
		<-tick.C
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%s:51820"}}}`, kilov1alpha1.AnnotationEndpoint, ip)
		mu.Lock()
		c.at = time.Now()
		mu.Unlock()
		wg.Go(func() {
			if _, err := b.kube[c.cluster].CoreV1().Nodes().Patch(ctx, nodeName(c.cluster, c.node), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, 0, err
	}
	select {
	case <-done:
	case i := <-closed:
		return 0, 0, 0, fmt.Errorf("burst: the watch of cluster %d's Peers closed", i)
	case <-time.After(time.Minute):
		return 0, 0, 0, fmt.Errorf("burst: %d of %d changes not everywhere within a minute", remaining, n)
	case <-ctx.Done():
		return 0, 0, 0, ctx.Err()
	}
	took := make([]time.Duration, n)
	for k, c := range changes {
		took[k] = c.took
	}
	p50, p99, worst = percentiles(took)
	return p50, p99, worst, nil
}
