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
	"k8s.io/client-go/dynamic"

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

		watches := map[int]watch.Interface{}
		for i := range b.clusters {
			if i == cluster {
				continue
			}
			w, err := b.peers[i].Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + peer})
			if err != nil {
				return 0, 0, 0, err
			}
			watches[i] = w
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%s:51820"}}}`, kilov1alpha1.AnnotationEndpoint, endpoint)
		start := time.Now()
		if _, err := b.kube[cluster].CoreV1().Nodes().Patch(ctx, nodeName(cluster, j), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return 0, 0, 0, err
		}
		for i, w := range watches {
			if err := waitEndpoint(ctx, b.peers[i], peer, w, endpoint); err != nil {
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

// waitEndpoint waits until the watch w of Peer name delivers it with
// endpoint ip. A watch the loaded API server closes is opened again from
// the Peer as it is then, so that no change goes unseen.
func waitEndpoint(ctx context.Context, peers dynamic.ResourceInterface, name string, w watch.Interface, ip string) error {
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				u, err := peers.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("reading Peer %s after its watch closed: %w", name, err)
				}
				if endpointIP(u) == ip {
					return nil
				}
				if w, err = peers.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: u.GetResourceVersion()}); err != nil {
					return fmt.Errorf("watching Peer %s again: %w", name, err)
				}
				defer w.Stop()
				continue
			}
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && endpointIP(u) == ip {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("no Peer with endpoint %s within a minute", ip)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func endpointIP(u *unstructured.Unstructured) string {
	ip, _, _ := unstructured.NestedString(u.Object, "spec", "endpoint", "dnsOrIP", "ip")
	return ip
}

// percentiles returns the p50, p99 and maximum of some durations.
func percentiles(took []time.Duration) (p50, p99, worst time.Duration) {
	slices.Sort(took)
	pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	return pct(0.5), pct(0.99), took[len(took)-1]
}
