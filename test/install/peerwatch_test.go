//go:build e2e

package install

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// meshPeers are the Peers of the mesh with uid on cluster i, by name.
func meshPeers(t *testing.T, ctx context.Context, i int, uid string) map[string]unstructured.Unstructured {
	t.Helper()
	list, err := env.Dynamic(i, admin).Resource(kilov1alpha1.PeerResource).List(ctx, metav1.ListOptions{LabelSelector: planner.LabelMeshUID + "=" + uid})
	if err != nil {
		t.Fatalf("listing Peers of cluster %d: %v", i, err)
	}
	out := map[string]unstructured.Unstructured{}
	for _, p := range list.Items {
		out[p.GetName()] = p
	}
	return out
}

// peerWatch counts the writes of the Peers of one mesh on one cluster, as
// their watchers see them.
type peerWatch struct {
	t       *testing.T
	cluster int
	w       watch.Interface
	done    chan struct{}
	// stopping is set before the watch is stopped, which ends it with an
	// error event.
	stopping atomic.Bool
	mu       sync.Mutex
	counts   map[string]int
}

// watchPeers starts counting the writes of the Peers of the mesh with uid
// on cluster i.
func watchPeers(t *testing.T, ctx context.Context, i int, uid string) *peerWatch {
	t.Helper()
	// The environment's clients end every request after 30 s, a watch
	// included; this one must last the whole takeover, however slow.
	cfg := env.RESTConfig(i, admin)
	cfg.Timeout = 0
	peers := dynamic.NewForConfigOrDie(cfg).Resource(kilov1alpha1.PeerResource)
	sel := planner.LabelMeshUID + "=" + uid
	list, err := peers.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatalf("listing Peers of cluster %d: %v", i, err)
	}
	w, err := peers.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watching Peers of cluster %d: %v", i, err)
	}
	pw := &peerWatch{t: t, cluster: i, w: w, done: make(chan struct{}), counts: map[string]int{}}
	go func() {
		defer close(pw.done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if pw.stopping.Load() {
					return
				}
				t.Errorf("watching Peers of cluster %d: %v", i, apierrors.FromObject(ev.Object))
				continue
			}
			if o, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Bookmark {
				pw.mu.Lock()
				pw.counts[o.GetName()]++
				pw.mu.Unlock()
			}
		}
	}()
	return pw
}

// seen returns the writes the watch has seen so far, by Peer name.
func (pw *peerWatch) seen() map[string]int {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return maps.Clone(pw.counts)
}

// stop ends the watch and returns the writes it saw, by Peer name.
func (pw *peerWatch) stop() map[string]int {
	select {
	case <-pw.done:
		// Writes after its end would go uncounted.
		pw.t.Errorf("the watch of the Peers of cluster %d ended early", pw.cluster)
	default:
	}
	pw.stopping.Store(true)
	pw.w.Stop()
	<-pw.done
	return pw.counts
}

// peerWrites sums the Peer write requests both clusters' kube-apiservers
// served, whether or not they changed anything.
func peerWrites(t *testing.T, ctx context.Context) float64 {
	t.Helper()
	var sum float64
	for i := range 2 {
		raw, err := framework.Scrape(ctx, env.RESTConfig(i, admin))
		if err != nil {
			t.Fatal(err)
		}
		w, err := framework.RequestWrites(raw, kilov1alpha1.GroupName, "peers")
		if err != nil {
			t.Fatal(err)
		}
		sum += w
	}
	return sum
}
