package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// floorAnnotation is what the floor follows; the server's member caches
// keep only kilo.squat.ai/ annotations, so the meshes ignore it.
const floorAnnotation = "bench.example/endpoint"

func floorPeer(src int) string { return fmt.Sprintf("bench-floor-c%d", src) }

// peers is the Peers' resource, which the floor's REST clients name.
var peers = kilov1alpha1.PeerResource.Resource

// floorChanges times the measured changes through the floor, the simplest
// controller: a Node informer on every member (one watch each) and, per
// change, one server-side apply of the source's whole Peer on each member
// that shares a mesh with it, written in parallel at the server's default
// member client rate. Its Peers are as large as the server's (floorSize)
// and written as the server writes them, so that the members and the
// tracker do the same work on both paths: what is left between the two is
// the server's own. It runs in the benchmark's process, on the same hollow
// members, while the server runs.
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
	// The floor's Peers exist before it is timed: a change rewrites them.
	floor := map[int]*kilov1alpha1.Peer{}
	for src, ts := range sources {
		size, err := b.floorSize(ctx, list, src)
		if err != nil {
			return nil, err
		}
		if floor[src], err = newFloorPeer(src, size); err != nil {
			return nil, err
		}
		body, err := json.Marshal(floor[src])
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if err := b.floorWrite(ctx, t, floor[src].Name, body); err != nil {
				return nil, err
			}
		}
	}
	defer func() {
		for src, ts := range sources {
			for _, t := range ts {
				if err := b.fleet.floorWrite[t].Delete().Resource(peers).Name(floorPeer(src)).Do(context.WithoutCancel(ctx)).Error(); err != nil {
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
		ts, peer := sources[i], floor[i]
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj any) {
				o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
				ip := n.Annotations[floorAnnotation]
				if peer == nil || ip == "" || ip == o.Annotations[floorAnnotation] {
					return
				}
				changed := *peer
				changed.Spec.Endpoint = &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: ip}, Port: 51820}
				body, err := json.Marshal(&changed)
				if err != nil {
					log.Printf("floor: encoding Peer %s: %v", peer.Name, err)
					return
				}
				var wg sync.WaitGroup
				for _, t := range ts {
					wg.Go(func() {
						if err := b.floorWrite(fctx, t, peer.Name, body); err != nil && fctx.Err() == nil {
							log.Print(err)
						}
					})
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

// floorSize is how many allowed IPs the server's Peer of src's first
// measured change holds. The floor's Peers carry as many: the members
// answer, and the tracker decodes, Peers of the same size on both paths (a
// location's Peer of 100 nodes is 7 KiB; a Peer of one address, 0.3).
func (b *bench) floorSize(ctx context.Context, list []change, src int) (int, error) {
	i := slices.IndexFunc(list, func(c change) bool { return c.src == src })
	c := list[i]
	name := planner.PeerName(c.mesh.namespace, c.mesh.name, clusterName(c.src), b.group(c))
	t := targets(c)[0]
	var p kilov1alpha1.Peer
	if err := b.fleet.floorWrite[t].Get().Resource(peers).Name(name).Do(ctx).Into(&p); err != nil {
		return 0, fmt.Errorf("floor: reading the server's Peer %s on member %d: %w", name, t, err)
	}
	if len(p.Spec.AllowedIPs) == 0 {
		return 0, fmt.Errorf("floor: the server's Peer %s on member %d has no allowed IPs", name, t)
	}
	return len(p.Spec.AllowedIPs), nil
}

// floorIPs are size addresses of the floor's Peer of src, in 10.255.0.0/16:
// outside every network of the fleet, so that the meshes see no conflict.
func floorIPs(src, size int) ([]string, error) {
	if (src+1)*size > 1<<16 {
		return nil, fmt.Errorf("floor: %d Peers of %d addresses do not fit 10.255.0.0/16", src+1, size)
	}
	ips := make([]string, size)
	for k := range ips {
		n := src*size + k
		ips[k] = fmt.Sprintf("10.255.%d.%d/32", n/256, n%256)
	}
	return ips, nil
}

// newFloorPeer is the floor's Peer of src, with size allowed IPs.
func newFloorPeer(src, size int) (*kilov1alpha1.Peer, error) {
	_, key, err := framework.NewWireGuardKey()
	if err != nil {
		return nil, err
	}
	ips, err := floorIPs(src, size)
	if err != nil {
		return nil, err
	}
	return &kilov1alpha1.Peer{
		TypeMeta:   metav1.TypeMeta{APIVersion: kilov1alpha1.SchemeGroupVersion.String(), Kind: kilov1alpha1.PeerKind},
		ObjectMeta: metav1.ObjectMeta{Name: floorPeer(src)},
		Spec:       kilov1alpha1.PeerSpec{AllowedIPs: ips, PublicKey: key},
	}, nil
}

// floorWrite is the floor's one write per change and target, an apply of
// the whole Peer. It reads nothing of the answer: it needs nothing from it.
func (b *bench) floorWrite(ctx context.Context, target int, name string, body []byte) error {
	err := b.fleet.floorWrite[target].Patch(types.ApplyPatchType).Resource(peers).Name(name).
		Param("fieldManager", "bench-floor").Param("force", "true").Body(body).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("floor: applying Peer %s on member %d: %w", name, target, err)
	}
	return nil
}
