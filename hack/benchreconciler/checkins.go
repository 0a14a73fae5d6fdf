package main

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// checkIns plays Kilo's agents: every node's last-seen is patched once per
// period, the nodes of a cluster spread evenly over it, as kg does. It
// runs until ctx ends; stop waits for it and returns the patches sent.
func (b *bench) checkIns(ctx context.Context, period time.Duration) (stop func() (sent, failed int64)) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var failed atomic.Int64
	sent := &b.checkInsSent
	for i := range b.clusters {
		wg.Go(func() {
			tick := time.NewTicker(period / time.Duration(b.nodes))
			defer tick.Stop()
			for j := 0; ; j = (j + 1) % b.nodes {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kilov1alpha1.AnnotationLastSeen, strconv.FormatInt(time.Now().Unix(), 10))
				// Sent asynchronously so that a slow answer does not slow the
				// stream; the kube-apiserver sees kg's steady rate.
				wg.Go(func() {
					_, err := b.kube[i].CoreV1().Nodes().Patch(ctx, nodeName(i, j), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
					switch {
					case err == nil:
						sent.Add(1)
					case ctx.Err() == nil:
						failed.Add(1)
					}
				})
			}
		})
	}
	log.Printf("check-in stream: every node's last-seen every %s, %.0f patches per second", period, float64(b.clusters*b.nodes)/period.Seconds())
	return func() (int64, int64) {
		cancel()
		wg.Wait()
		return sent.Load(), failed.Load()
	}
}
