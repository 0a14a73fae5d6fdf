package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// singleChanges moves one node's endpoint at a time and times until the
// Peer carrying it shows the new endpoint on every other cluster, seen
// through watches started before the change.
func (b *bench) singleChanges(ctx context.Context) (p50, p99, worst time.Duration, err error) {
	var took []time.Duration
	for n := range b.changes {
		cluster := 1 + n%(b.clusters-1) // remote sources, through tenant kubeconfigs
		if b.clusters == 1 {
			cluster = 0
		}
		j := (n * 97) % b.nodes
		group := "node:" + nodeName(cluster, j)
		if b.granularity == string(meshv1alpha1.GranularityLocation) {
			j -= j % b.perLoc // the leader carries the location's endpoint
			group = fmt.Sprintf("location:loc-%03d", j/b.perLoc)
		}
		peer := planner.PeerName(namespace, meshName, clusterName(cluster), group)
		endpoint := fmt.Sprintf("198.19.%d.%d", n/256, n%256)

		var watches []watch.Interface
		for i := range b.clusters {
			if i == cluster {
				continue
			}
			w, err := b.peers[i].Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + peer})
			if err != nil {
				return 0, 0, 0, err
			}
			watches = append(watches, w)
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%s:51820"}}}`, kilov1alpha1.AnnotationEndpoint, endpoint)
		start := time.Now()
		if _, err := b.kube[cluster].CoreV1().Nodes().Patch(ctx, nodeName(cluster, j), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return 0, 0, 0, err
		}
		for _, w := range watches {
			if err := waitEndpoint(ctx, w, endpoint); err != nil {
				return 0, 0, 0, fmt.Errorf("change %d (Peer %s): %w", n, peer, err)
			}
			w.Stop()
		}
		took = append(took, time.Since(start))
	}
	p50, p99, worst = percentiles(took)
	log.Printf("%d single changes: p50 %s, p99 %s", len(took), p50, p99)
	return p50, p99, worst, nil
}

func waitEndpoint(ctx context.Context, w watch.Interface, ip string) error {
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("watch closed")
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if got, _, _ := unstructured.NestedString(u.Object, "spec", "endpoint", "dnsOrIP", "ip"); got == ip {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("no Peer with endpoint %s within a minute", ip)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// percentiles returns the p50, p99 and maximum of some durations.
func percentiles(took []time.Duration) (p50, p99, worst time.Duration) {
	slices.Sort(took)
	pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	return pct(0.5), pct(0.99), took[len(took)-1]
}
