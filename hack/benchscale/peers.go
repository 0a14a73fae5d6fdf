package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// tracker follows the Peers of every member through one informer each, and
// tells waiters when a Peer shows an endpoint.
type tracker struct {
	mu      sync.Mutex
	peers   []map[string]peerState
	waiters map[waitKey][]waiter
	// events counts the Peer events seen.
	events atomic.Int64
}

type peerState struct{ ip, mesh string }

type waitKey struct {
	member int
	name   string
}

type waiter struct {
	ip   string
	done chan struct{}
}

func newTracker() *tracker { return &tracker{waiters: map[waitKey][]waiter{}} }

// start runs the informers until ctx ends and waits until they synced.
func (t *tracker) start(ctx context.Context, f *fleet) error {
	params := runtime.NewParameterCodec(func() *runtime.Scheme {
		s := runtime.NewScheme()
		_ = kilov1alpha1.AddToScheme(s)
		return s
	}())
	var synced []cache.InformerSynced
	for i, rc := range f.peerRead {
		t.peers = append(t.peers, map[string]peerState{})
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				var l kilov1alpha1.PeerList
				err := rc.Get().Resource(kilov1alpha1.PeerResource.Resource).VersionedParams(&o, params).Do(ctx).Into(&l)
				return &l, err
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.Watch = true
				return rc.Get().Resource(kilov1alpha1.PeerResource.Resource).VersionedParams(&o, params).Watch(ctx)
			},
		}
		inf := cache.NewSharedIndexInformer(lw, &kilov1alpha1.Peer{}, 0, cache.Indexers{})
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { t.set(i, obj) },
			UpdateFunc: func(_, obj any) { t.set(i, obj) },
			DeleteFunc: func(obj any) { t.remove(i, obj) },
		}); err != nil {
			return err
		}
		go inf.RunWithContext(ctx)
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("the Peer watches of the members did not sync")
	}
	return nil
}

func (t *tracker) set(member int, obj any) {
	p, ok := obj.(*kilov1alpha1.Peer)
	if !ok {
		return
	}
	t.events.Add(1)
	ip := ""
	if p.Spec.Endpoint != nil {
		ip = p.Spec.Endpoint.DNSOrIP.IP
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peers[member][p.Name] = peerState{ip: ip, mesh: p.Labels[planner.LabelMeshUID]}
	key := waitKey{member, p.Name}
	ws := t.waiters[key]
	kept := ws[:0]
	for _, w := range ws {
		if w.ip == ip {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		delete(t.waiters, key)
	} else {
		t.waiters[key] = kept
	}
}

func (t *tracker) remove(member int, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*kilov1alpha1.Peer)
	if !ok {
		return
	}
	t.events.Add(1)
	t.mu.Lock()
	delete(t.peers[member], p.Name)
	t.mu.Unlock()
}

// waitFor is closed once Peer name on member shows endpoint ip.
func (t *tracker) waitFor(member int, name, ip string) <-chan struct{} {
	done := make(chan struct{})
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.peers[member][name].ip == ip {
		close(done)
		return done
	}
	key := waitKey{member, name}
	t.waiters[key] = append(t.waiters[key], waiter{ip: ip, done: done})
	return done
}

// count is how many Peers of the meshes uids member holds.
func (t *tracker) count(member int, uids map[string]bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, p := range t.peers[member] {
		if uids[p.mesh] {
			n++
		}
	}
	return n
}
