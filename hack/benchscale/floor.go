package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// floorAnnotation is what the floor follows; the server's member caches
// keep only kilo.squat.ai/ annotations, so the meshes ignore it.
const floorAnnotation = "bench.example/endpoint"

func floorPeer(src int) string { return fmt.Sprintf("bench-floor-c%d", src) }

// floorChanges times the measured changes through the floor, the simplest
// controller: a Node informer on every member (one watch each) and, per
// change, one merge patch of the source's Peer on each member that shares a
// mesh with it, written in parallel at the server's default member client
// rate. It runs in the benchmark's process, on the same hollow members,
// while the server runs.
func (b *bench) floorChanges(ctx context.Context) ([]time.Duration, error) {
	list := b.changeList(b.changes)
	sources := map[int][]int{} // source -> every member it shares a mesh with
	for _, c := range list {
		if _, ok := sources[c.src]; ok {
			continue
		}
		var all []int
		for _, m := range b.meshes {
			if slices.Contains(m.members, c.src) {
				all = append(all, targets(change{mesh: m, src: c.src})...)
			}
		}
		slices.Sort(all)
		sources[c.src] = slices.Compact(all)
	}
	// The floor's Peers exist before it is timed: a change patches them.
	for src, ts := range sources {
		for _, t := range ts {
			if err := b.floorCreate(ctx, t, src); err != nil {
				return nil, err
			}
		}
	}
	defer func() {
		for src, ts := range sources {
			for _, t := range ts {
				if err := b.fleet.floorWrite[t].Delete(context.WithoutCancel(ctx), floorPeer(src), metav1.DeleteOptions{}); err != nil {
					log.Printf("floor: deleting Peer %s on member %d: %v", floorPeer(src), t, err)
				}
			}
		}
	}()

	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var synced []cache.InformerSynced
	for i := range b.members {
		factory := informers.NewSharedInformerFactory(b.fleet.kube[i], 0)
		inf := factory.Core().V1().Nodes().Informer()
		ts := sources[i]
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj any) {
				o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
				ip := n.Annotations[floorAnnotation]
				if ip == "" || ip == o.Annotations[floorAnnotation] {
					return
				}
				var wg sync.WaitGroup
				for _, t := range ts {
					wg.Go(func() { b.floorWrite(fctx, t, i, ip) })
				}
				wg.Wait()
			},
		}); err != nil {
			return nil, err
		}
		factory.Start(fctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(fctx.Done(), synced...) {
		return nil, fmt.Errorf("the floor's informers did not sync")
	}
	return b.timeChanges(ctx, list, func(ctx context.Context, c change, ip string) ([]<-chan struct{}, error) {
		var waits []<-chan struct{}
		for _, t := range targets(c) {
			waits = append(waits, b.peers.waitFor(t, floorPeer(c.src), ip))
		}
		return waits, b.patchNode(ctx, c.src, c.node, floorAnnotation, ip)
	})
}

func (b *bench) floorCreate(ctx context.Context, target, src int) error {
	_, key, err := framework.NewWireGuardKey()
	if err != nil {
		return err
	}
	peer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kilov1alpha1.SchemeGroupVersion.String(), "kind": kilov1alpha1.PeerKind,
		"metadata": map[string]any{"name": floorPeer(src)},
		"spec":     map[string]any{"allowedIPs": []any{fmt.Sprintf("10.255.%d.%d/32", src/256, src%256)}, "publicKey": key},
	}}
	if _, err := b.fleet.floorWrite[target].Create(ctx, peer, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("floor: creating Peer %s on member %d: %w", floorPeer(src), target, err)
	}
	return nil
}

// floorWrite is the floor's one write per change and target.
func (b *bench) floorWrite(ctx context.Context, target, src int, ip string) {
	patch := fmt.Sprintf(`{"spec":{"endpoint":{"dnsOrIP":{"ip":%q},"port":51820}}}`, ip)
	if _, err := b.fleet.floorWrite[target].Patch(ctx, floorPeer(src), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
		log.Printf("floor: patching Peer %s on member %d: %v", floorPeer(src), target, err)
	}
}
