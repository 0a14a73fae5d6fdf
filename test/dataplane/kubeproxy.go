package dataplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// KubeProxy stands in for kube-proxy on one node: it watches its own
// cluster's Services and EndpointSlices, as kube-proxy does, and turns each
// ClusterIP Service into nftables DNAT rules inside the node's namespace
// (to its ready endpoints, chosen at random; a reject without any) plus a
// host route for the ClusterIP, which stands in for the node's default
// route. It never reads the server's plan: whatever reaches a pod through
// it went through the EndpointSlices the server wrote.
type KubeProxy struct {
	node *Node
	bed  *Bed
	nft  string
	stop context.CancelFunc
	done chan struct{}
	kick chan struct{}

	services cache.Indexer
	slices   cache.Indexer

	mu      sync.Mutex
	routes  []netip.Addr          // ClusterIPs routed now
	applied map[string]ProxyRules // by namespace/name of the Service
	at      time.Time             // when the last change was applied
	err     error                 // the last apply's failure
}

// ProxyRules is what the stand-in sends a ClusterIP Service to.
type ProxyRules struct {
	ClusterIP netip.Addr
	Port      int32
	// Endpoints are address:port, sorted; none means a reject.
	Endpoints []netip.AddrPort
}

// proxyTable is the nftables table the stand-in owns in the namespace.
const proxyTable = "kube-proxy-standin"

// StartKubeProxy runs the stand-in on node n until Stop (or the bed's end).
// It needs nftables' nft in PATH.
func (b *Bed) StartKubeProxy(ctx context.Context, n *Node) (*KubeProxy, error) {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return nil, errors.New("the kube-proxy stand-in needs nftables' nft: apt-get install --no-install-recommends nftables")
	}
	factory := informers.NewSharedInformerFactory(b.Env.Client(n.Cluster, framework.UserAdmin), 0)
	svcInf, sliceInf := factory.Core().V1().Services().Informer(), factory.Discovery().V1().EndpointSlices().Informer()
	runCtx, cancel := context.WithCancel(context.Background())
	p := &KubeProxy{node: n, bed: b, nft: nft, stop: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1),
		services: svcInf.GetIndexer(), slices: sliceInf.GetIndexer(), applied: map[string]ProxyRules{}}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.changed() },
		UpdateFunc: func(any, any) { p.changed() },
		DeleteFunc: func(any) { p.changed() },
	}
	for _, inf := range []cache.SharedIndexInformer{svcInf, sliceInf} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			cancel()
			return nil, err
		}
	}
	factory.Start(runCtx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("kube-proxy stand-in on %s: %v never synced", n.Name, typ)
		}
	}
	go p.run(runCtx)
	p.changed()
	return p, nil
}

// Stop ends the stand-in and removes its rules and routes.
func (p *KubeProxy) Stop(ctx context.Context) error {
	p.stop()
	<-p.done
	return p.apply(ctx, nil)
}

func (p *KubeProxy) changed() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run applies the rules after every change of the caches, like
// kube-proxy's sync loop (without its minimum interval).
func (p *KubeProxy) run(ctx context.Context) {
	defer close(p.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		}
		err := p.apply(ctx, p.rules())
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			p.bed.logf("kube-proxy stand-in on %s: %v", p.node.Name, err)
		}
	}
}

// rules computes the rules from the caches.
func (p *KubeProxy) rules() map[string]ProxyRules {
	var svcs []*corev1.Service
	for _, obj := range p.services.List() {
		svcs = append(svcs, obj.(*corev1.Service))
	}
	var ess []*discoveryv1.EndpointSlice
	for _, obj := range p.slices.List() {
		ess = append(ess, obj.(*discoveryv1.EndpointSlice))
	}
	return proxyRules(svcs, ess)
}

// proxyRules computes the rules of every IPv4 ClusterIP Service, by
// "namespace/name:port": the endpoints of its EndpointSlices (label
// kubernetes.io/service-name) that are not known to be unready, on the
// slice's port of the same name.
func proxyRules(svcs []*corev1.Service, ess []*discoveryv1.EndpointSlice) map[string]ProxyRules {
	out := map[string]ProxyRules{}
	for _, svc := range svcs {
		ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil || !ip.Is4() {
			continue // headless, or a family the stand-in does not route
		}
		sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
		for _, sp := range svc.Spec.Ports {
			r := ProxyRules{ClusterIP: ip, Port: sp.Port}
			for _, es := range ess {
				if es.Namespace != svc.Namespace || !sel.Matches(labels.Set(es.Labels)) || es.AddressType != discoveryv1.AddressTypeIPv4 {
					continue
				}
				port := slicePort(es, sp)
				if port == 0 {
					continue
				}
				for _, e := range es.Endpoints {
					if e.Conditions.Ready != nil && !*e.Conditions.Ready {
						continue
					}
					for _, a := range e.Addresses {
						if addr, err := netip.ParseAddr(a); err == nil {
							r.Endpoints = append(r.Endpoints, netip.AddrPortFrom(addr, uint16(port)))
						}
					}
				}
			}
			slices.SortFunc(r.Endpoints, netip.AddrPort.Compare)
			out[fmt.Sprintf("%s/%s:%d", svc.Namespace, svc.Name, sp.Port)] = r
		}
	}
	return out
}

// slicePort is the port of es for the Service port sp (matched by name).
func slicePort(es *discoveryv1.EndpointSlice, sp corev1.ServicePort) int32 {
	for _, p := range es.Ports {
		if p.Port != nil && ptrOr(p.Name) == sp.Name && (p.Protocol == nil || *p.Protocol == sp.Protocol) {
			return *p.Port
		}
	}
	return 0
}

func ptrOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ruleset renders rules as one nft transaction that replaces the
// stand-in's table, and returns the ClusterIPs to route, sorted.
func ruleset(rules map[string]ProxyRules) (string, []netip.Addr) {
	var s strings.Builder
	// Adding then deleting makes the deletion succeed on the first run too.
	fmt.Fprintf(&s, "add table ip %s\ndelete table ip %s\n", proxyTable, proxyTable)
	var ips []netip.Addr
	if len(rules) > 0 {
		fmt.Fprintf(&s, "table ip %s {\n", proxyTable)
		keys := slices.Sorted(maps.Keys(rules))
		for k, key := range keys {
			r := rules[key]
			ips = append(ips, r.ClusterIP)
			fmt.Fprintf(&s, "  chain svc%d {\n", k)
			if len(r.Endpoints) == 0 {
				s.WriteString("    reject with tcp reset\n")
			} else {
				fmt.Fprintf(&s, "    numgen random mod %d vmap {", len(r.Endpoints))
				for e := range r.Endpoints {
					if e > 0 {
						s.WriteString(",")
					}
					fmt.Fprintf(&s, " %d : goto svc%dep%d", e, k, e)
				}
				s.WriteString(" }\n")
			}
			s.WriteString("  }\n")
			for e, ep := range r.Endpoints {
				fmt.Fprintf(&s, "  chain svc%dep%d {\n    meta l4proto tcp dnat to %s\n  }\n", k, e, ep)
			}
		}
		s.WriteString("  chain output {\n    type nat hook output priority -100; policy accept;\n")
		for k, key := range keys {
			r := rules[key]
			fmt.Fprintf(&s, "    ip daddr %s tcp dport %d goto svc%d\n", r.ClusterIP, r.Port, k)
		}
		s.WriteString("  }\n}\n")
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	return s.String(), slices.Compact(ips)
}

// apply replaces the stand-in's table in one nft transaction, then makes
// the ClusterIP routes match, and records what it applied. It holds mu from
// the first change to the record, so that Applied never says less than a
// connection through the new rules has already met.
func (p *KubeProxy) apply(ctx context.Context, rules map[string]ProxyRules) error {
	text, ips := ruleset(rules)
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", p.node.Namespace, p.nft, "-f", "-")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s\nruleset:\n%s", p.node.Namespace, err, out, text)
	}
	var cmds []string
	for _, ip := range ips {
		if !slices.Contains(p.routes, ip) {
			cmds = append(cmds, fmt.Sprintf("route replace %s/32 dev pods", ip))
		}
	}
	for _, ip := range p.routes {
		if !slices.Contains(ips, ip) {
			cmds = append(cmds, fmt.Sprintf("route del %s/32 dev pods", ip))
		}
	}
	if len(cmds) > 0 {
		if err := p.bed.underlay.IP(ctx, p.node.Namespace, cmds...); err != nil {
			return err
		}
	}
	p.routes = ips
	if !maps.EqualFunc(p.applied, rules, sameRules) {
		p.applied, p.at = rules, time.Now()
	}
	return nil
}

// Applied returns what the stand-in sends to for the Service port
// namespace/name:port, whether it has rules for it, and when its rules
// last changed; it waits for an apply under way to finish.
func (p *KubeProxy) Applied(namespace, name string, port int32) (ProxyRules, bool, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.applied[fmt.Sprintf("%s/%s:%d", namespace, name, port)]
	return r, ok, p.at
}

// Err is the last apply's failure, nil once one succeeded after it.
func (p *KubeProxy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func sameRules(a, b ProxyRules) bool {
	return a.ClusterIP == b.ClusterIP && a.Port == b.Port && slices.Equal(a.Endpoints, b.Endpoints)
}

// Describe lists the node's routes and the stand-in's ruleset, for a
// failure message.
func (p *KubeProxy) Describe(ctx context.Context) string {
	var s strings.Builder
	for _, args := range [][]string{{"ip", "-n", p.node.Namespace, "route", "show", "table", "all"}, {"ip", "netns", "exec", p.node.Namespace, p.nft, "list", "ruleset"}} {
		out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
		fmt.Fprintf(&s, "$ %s\n%s", strings.Join(args, " "), out)
		if err != nil {
			fmt.Fprintf(&s, "(%v)\n", err)
		}
	}
	return s.String()
}
