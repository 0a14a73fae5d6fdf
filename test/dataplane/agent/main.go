// Command agent plays the part of Kilo's kg on one node of the data-plane
// test bed (test/dataplane): it watches its own cluster's Nodes and Kilo
// Peers, and configures its node's userspace WireGuard device and routes as
// kg would. It reads nothing from kilo-mesh-apiserver, only what Kilo
// itself reads, so the packets it lets through prove the Peers the server
// writes. Run it inside the node's network namespace (see hostdial.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

type options struct {
	kubeconfig     string
	hostNetns      string
	node           string
	privateKeyFile string
	statusFile     string
	iface          string
	underlay       string
	port           int
	resync         time.Duration
}

func main() {
	klog.InitFlags(nil)
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the node's own cluster (its server must be a loopback IP)")
	flag.StringVar(&o.hostNetns, "api-netns", "", "network namespace (a path such as /proc/PID/ns/net) whose loopback the kube-apiserver listens on")
	flag.StringVar(&o.node, "node", "", "name of this node")
	flag.StringVar(&o.privateKeyFile, "private-key-file", "", "the node's WireGuard private key, base64; re-read on SIGHUP")
	flag.StringVar(&o.statusFile, "status-file", "", "where to write what was applied last (JSON)")
	flag.StringVar(&o.iface, "interface", "kilo0", "WireGuard interface to create")
	flag.StringVar(&o.underlay, "underlay", "eth0", "interface towards the other nodes")
	flag.IntVar(&o.port, "port", 51820, "WireGuard listen port")
	flag.DurationVar(&o.resync, "resync", 5*time.Second, "re-evaluate this often without events (check-ins expire with time)")
	flag.Parse()
	if o.kubeconfig == "" || o.hostNetns == "" || o.node == "" || o.privateKeyFile == "" {
		fmt.Fprintln(os.Stderr, "--kubeconfig, --api-netns, --node and --private-key-file are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "agent failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func readKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func run(ctx context.Context, o options) error {
	if _, err := os.Stat(o.hostNetns); err != nil {
		return fmt.Errorf("the API server's network namespace: %w", err)
	}
	if err := enableForwarding(); err != nil {
		return err
	}
	key, err := readKey(o.privateKeyFile)
	if err != nil {
		return err
	}
	dp, err := newDataplane(ctx, o.iface, o.underlay, o.port, key)
	if err != nil {
		return err
	}
	defer dp.close()

	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.Dial = (&hostDialer{netns: o.hostNetns}).DialContext
	cfg.UserAgent = "kilo-mesh-dataplane-agent/" + o.node
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}

	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	nodeFactory := informers.NewSharedInformerFactory(kube, 0)
	nodes := nodeFactory.Core().V1().Nodes()
	if _, err := nodes.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	peerFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	peers := peerFactory.ForResource(kilov1alpha1.PeerResource)
	if _, err := peers.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	nodeFactory.Start(ctx.Done())
	peerFactory.Start(ctx.Done())
	defer nodeFactory.Shutdown()
	defer peerFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced, peers.Informer().HasSynced) {
		return fmt.Errorf("caches of cluster Nodes and Peers did not sync")
	}
	klog.InfoS("watching Nodes and Peers", "node", o.node, "server", cfg.Host)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ticker := time.NewTicker(o.resync)
	defer ticker.Stop()
	var last []byte
	generation := 0
	for {
		start := time.Now()
		nodeList, err := nodes.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		objs, err := peers.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		crs := toPeers(objs)
		c, err := compute(o.node, nodeList, crs, time.Now())
		if err != nil {
			klog.ErrorS(err, "cannot configure the node")
		} else if err := dp.apply(ctx, c); err != nil {
			klog.ErrorS(err, "applying the configuration; retrying")
			time.AfterFunc(time.Second, poke)
		} else if summary, _ := json.Marshal(c); string(summary) != string(last) {
			last = summary
			generation++
			klog.InfoS("applied", "generation", generation, "group", c.Group, "leader", c.Leader, "isLeader", c.IsLeader,
				"peers", len(c.Peers), "routes", len(c.Routes), "took", time.Since(start), "notes", c.Notes)
			if err := writeStatus(o.statusFile, status{config: c, PublicKey: publicKeyOf(key), Generation: generation, AppliedAt: time.Now()}); err != nil {
				klog.ErrorS(err, "writing the status file")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-ticker.C:
		case <-hup:
			newKey, err := readKey(o.privateKeyFile)
			if err == nil {
				err = dp.setPrivateKey(newKey)
			}
			if err != nil {
				klog.ErrorS(err, "reloading the private key")
				continue
			}
			key, last = newKey, nil
			klog.InfoS("private key replaced", "publicKey", publicKeyOf(key))
		}
	}
}

func toPeers(objs []runtime.Object) []*kilov1alpha1.Peer {
	out := make([]*kilov1alpha1.Peer, 0, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		p := &kilov1alpha1.Peer{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			// kg's typed client would fail the same object: ignore it.
			klog.InfoS("ignoring a Peer that does not decode", "peer", u.GetName(), "err", err)
			continue
		}
		out = append(out, p)
	}
	return out
}

// status is what the agent applied last, for the test and for people.
type status struct {
	config
	PublicKey  string    `json:"publicKey"`
	Generation int       `json:"generation"`
	AppliedAt  time.Time `json:"appliedAt"`
}

func writeStatus(path string, s status) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".status-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	tmp.Close()
	return os.Rename(tmp.Name(), path)
}
