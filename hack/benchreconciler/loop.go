package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// loopAnnotation is the key the simplest loop follows; the server's member
// caches keep only kilo.squat.ai/ annotations, so the mesh ignores it.
const loopAnnotation = "bench.example/endpoint"

// loopPeer is the Peer the simplest loop writes on its target cluster.
const loopPeer = "bench-simplest-loop"

// simplestLoop is the floor the server is compared with: the simplest controller for
// one pair of clusters, a Go informer on the Nodes of one and one merge
// patch of one Peer on the other per change, with the server's default
// member client rate. It runs in the benchmark's process, against the same
// kube-apiservers, while the server and the check-in stream run.
func (b *bench) simplestLoop(ctx context.Context, source, target int) (stop func(), err error) {
	rate := func(cfg *rest.Config) *rest.Config {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = clusters.DefaultQPS, clusters.DefaultBurst // --member-cluster-qps and -burst defaults
		return cfg
	}
	nodes, err := kubernetes.NewForConfig(rate(b.env.RESTConfig(source, framework.UserAdmin)))
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rate(b.env.RESTConfig(target, framework.UserAdmin)))
	if err != nil {
		return nil, err
	}
	peers := dyn.Resource(kilov1alpha1.PeerResource)
	_, key, err := framework.NewWireGuardKey()
	if err != nil {
		return nil, err
	}
	peer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kilov1alpha1.SchemeGroupVersion.String(), "kind": "Peer",
		"metadata": map[string]any{"name": loopPeer},
		"spec":     map[string]any{"allowedIPs": []any{"10.255.255.1/32"}, "publicKey": key},
	}}
	if _, err := peers.Create(ctx, peer, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the simplest loop's Peer: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(nodes, 0)
	inf := factory.Core().V1().Nodes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
			ip := n.Annotations[loopAnnotation]
			if ip == "" || ip == o.Annotations[loopAnnotation] {
				return
			}
			patch := fmt.Sprintf(`{"spec":{"endpoint":{"dnsOrIP":{"ip":%q},"port":51820}}}`, ip)
			if _, err := peers.Patch(ctx, loopPeer, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
				fmt.Printf("simplest loop: patching Peer %s: %v\n", loopPeer, err)
			}
		},
	}); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("the simplest loop's informer did not sync")
	}
	// The Peer goes with the loop: to the server it is a Peer of others on a
	// target, and a target holding one is planned whole after every change
	// of its Peers, which would tax the burst and the steady state measured
	// after the loop.
	return func() {
		cancel()
		factory.Shutdown()
		if err := peers.Delete(context.WithoutCancel(ctx), loopPeer, metav1.DeleteOptions{}); err != nil {
			fmt.Printf("simplest loop: deleting Peer %s: %v\n", loopPeer, err)
		}
	}, nil
}

// loopChanges times changes through the simplest loop as singleChanges
// times the server's: from the Node patch until a watch opened before it
// delivers the Peer with the new endpoint.
func (b *bench) loopChanges(ctx context.Context, source, target int) (p50, p99, worst time.Duration, err error) {
	stop, err := b.simplestLoop(ctx, source, target)
	if err != nil {
		return 0, 0, 0, err
	}
	defer stop()
	var took []time.Duration
	for n := range b.changes {
		j := (n * 97) % b.nodes
		ip := fmt.Sprintf("198.20.%d.%d", n/256, n%256)
		w, err := b.peers[target].Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + loopPeer})
		if err != nil {
			return 0, 0, 0, err
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, loopAnnotation, ip)
		start := time.Now()
		if _, err := b.kube[source].CoreV1().Nodes().Patch(ctx, nodeName(source, j), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return 0, 0, 0, err
		}
		if err := waitEndpoint(ctx, b.peers[target], loopPeer, w, ip); err != nil {
			return 0, 0, 0, fmt.Errorf("simplest loop, change %d: %w", n, err)
		}
		w.Stop()
		took = append(took, time.Since(start))
	}
	p50, p99, worst = percentiles(took)
	return p50, p99, worst, nil
}
