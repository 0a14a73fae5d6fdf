// Package dataplane builds a test bed that carries packets through the Kilo
// Peers kilo-mesh-apiserver writes: real kube-apiservers and the real
// server binary (test/framework), every Kilo node a network namespace on a
// bridged underlay, each running the agent of test/dataplane/agent (kg's
// part: userspace WireGuard and routes from its own cluster's Nodes and
// Peers), and "pods" and "services" as addresses inside those namespaces
// that the test probes with UDP echoes.
//
// The bed needs root (network namespaces, veth pairs, TUN devices) and
// iproute2. Every packet stays on loopback (the API traffic) or inside the
// namespaces it made (everything else): see framework.Underlay.
package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The shape of the bed. Each cluster i has location a with two IPv4 nodes
// (a1 leads) and location b with one node whose pod CIDR is IPv6 (kg reads
// only spec.podCIDR; an IPv6 range cannot take the IPv4 next hop of a
// member's route to its leader, so IPv6 pods live on a leader). Cluster 1
// also has the nodes the plan skips.
const (
	// Clusters is the number of kube-apiservers; cluster 0 hosts the server.
	Clusters = 3
	// MeshName is the ClusterMesh the bed creates.
	MeshName = "dataplane"
	// EchoPort is the UDP port of the echo servers on pods and services.
	EchoPort = 7007
	// WireGuardPort is every node's WireGuard port.
	WireGuardPort = 51820
	// agentUser is the identity of the agents, with read access to Nodes
	// and Peers only.
	agentUser = "kg"
)

// Skip says why the plan leaves a node out, for the nodes made to be left
// out; "" for the others.
type Skip string

// The ways a node is left out (what the plan's reasons will say).
const (
	SkipNone    Skip = ""
	SkipNoKey   Skip = planner.ReasonNoPublicKey
	SkipStale   Skip = planner.ReasonNotReady
	SkipOutside Skip = planner.ReasonPodCIDROutsideDeclared
)

// Node is one Kilo node of the bed.
type Node struct {
	Cluster  int
	Name     string // c<cluster>-<short>
	Location string
	// Underlay is the node's address on the bridge that other nodes dial:
	// its kilo.squat.ai/endpoint (TEST-NET-3, a public address to Kilo,
	// only ever present inside the bed's namespaces).
	Underlay netip.Addr
	// Internal is its kilo.squat.ai/internal-ip on the same bridge, a
	// subnet per cluster.
	Internal netip.Addr
	PodCIDR  netip.Prefix
	// Pod is the node's pod: the first host of PodCIDR (.10).
	Pod netip.Addr
	// Skip is why the plan leaves the node out, if it was made to be.
	Skip Skip
	// Namespace is the node's network namespace.
	Namespace string

	mu         sync.Mutex
	privateKey string
	publicKey  string
	agent      *framework.NetnsProcess
	keyFile    string
	statusFile string
}

// RunsAgent tells whether kg runs on the node: not on a node without a key
// nor on one that stopped checking in.
func (n *Node) RunsAgent() bool { return n.Skip != SkipNoKey && n.Skip != SkipStale }

// PublicKey is the node's current WireGuard public key.
func (n *Node) PublicKey() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.publicKey
}

// Endpoint is the node's kilo.squat.ai/endpoint.
func (n *Node) Endpoint() string {
	return netip.AddrPortFrom(n.Underlay, WireGuardPort).String()
}

// layout returns the nodes of the bed.
func layout() []*Node {
	var nodes []*Node
	add := func(cluster, host int, short, location, pod string, skip Skip) {
		p := netip.MustParsePrefix(pod)
		nodes = append(nodes, &Node{
			Cluster:  cluster,
			Name:     fmt.Sprintf("c%d-%s", cluster, short),
			Location: location,
			Underlay: netip.AddrFrom4([4]byte{203, 0, 113, byte(10*cluster + host)}),
			Internal: netip.AddrFrom4([4]byte{192, 168, byte(cluster), byte(host)}),
			PodCIDR:  p,
			Pod:      nthHost(p, 10),
			Skip:     skip,
		})
	}
	for i := range Clusters {
		add(i, 1, "a1", "a", fmt.Sprintf("10.%d.1.0/24", 10+i), SkipNone)
		add(i, 2, "a2", "a", fmt.Sprintf("10.%d.2.0/24", 10+i), SkipNone)
		add(i, 3, "b1", "b", fmt.Sprintf("fd10:%d:0:3::/64", i), SkipNone)
	}
	add(1, 7, "nokey", "a", "10.11.7.0/24", SkipNoKey)
	add(1, 8, "stale", "a", "10.11.8.0/24", SkipStale)
	add(1, 9, "outside", "a", "10.111.9.0/24", SkipOutside)
	return nodes
}

// nthHost returns address n of prefix p.
func nthHost(p netip.Prefix, n int) netip.Addr {
	a := p.Masked().Addr().AsSlice()
	a[len(a)-1] += byte(n)
	addr, _ := netip.AddrFromSlice(a)
	return addr
}

// Declared networks of cluster i in the mesh.
func podCIDRs(i int) []string {
	v6 := netip.MustParsePrefix(fmt.Sprintf("fd10:%d::/48", i))
	return []string{fmt.Sprintf("10.%d.0.0/16", 10+i), v6.String()}
}
func serviceCIDR(i int) netip.Prefix { return netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", 96+i)) }
func wireguardCIDR(i int) netip.Prefix {
	return netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", 40+i))
}

// ServiceAddr is the one service address of cluster i.
func ServiceAddr(i int) netip.Addr { return nthHost(serviceCIDR(i), 10) }

// ClusterName is the name of cluster i in the mesh.
func ClusterName(i int) string { return fmt.Sprintf("cluster-%d", i) }

// Options configure Start.
type Options struct {
	// Logf receives progress messages (default: discarded).
	Logf func(format string, args ...any)
	// BehindNAT are the clusters whose nodes sit behind a NAT router of
	// their own (nat.go).
	BehindNAT []int
}

// Bed is a running test bed.
type Bed struct {
	Env    *framework.Env
	Server *framework.MeshServer
	// Nodes are all nodes, by cluster then name.
	Nodes []*Node
	// Namespace holds the ClusterMesh on the host cluster.
	Namespace string

	underlay *framework.Underlay
	agentBin string
	logf     func(string, ...any)
	echo     *echoServers
	stop     context.CancelFunc // ends checkIn
	checkins sync.WaitGroup

	mu           sync.Mutex
	services     map[int]*Node // where each cluster's service address is
	meshUID      types.UID
	meshClusters []int
	full         bool // full granularity, else location
	mcs          bool // ApplyMesh enables multi-cluster services
	// routers holds the router namespace of each cluster behind NAT.
	routers map[int]string
	// natSpec and relay are what ApplyMesh declares: behindNAT per
	// cluster, spec.relayCluster (DeclareNAT, DeclareRelay).
	natSpec map[int]bool
	relay   string
}

// Start builds the bed: the control planes and the server, the underlay,
// the nodes (Node objects and namespaces), the agents and the echo servers.
// The mesh itself is made by ApplyMesh. On error everything is torn down.
func Start(ctx context.Context, opts Options) (_ *Bed, err error) {
	b := &Bed{logf: opts.Logf, services: map[int]*Node{}, routers: map[int]string{}, natSpec: map[int]bool{}}
	if b.logf == nil {
		b.logf = func(string, ...any) {}
	}
	start := time.Now()
	// The namespaces first: without them nothing else is worth starting.
	if b.underlay, err = framework.NewUnderlay(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Stop())
		}
	}()
	b.Env, err = framework.Start(ctx, framework.Options{
		Clusters: Clusters,
		Users:    []framework.User{{Name: agentUser, Groups: []string{"kilo-mesh:kg"}}},
		Logf:     opts.Logf,
	})
	if err != nil {
		return nil, err
	}
	bgCtx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	if b.agentBin, err = buildAgent(ctx, b.Env.Dir); err != nil {
		return nil, err
	}
	b.Server, err = b.Env.StartMeshServer(ctx, framework.MeshServerOptions{
		ExtraArgs: []string{
			// A restarted server (the negative control) takes the lease at once.
			"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
			"-v=2",
		},
	})
	if err != nil {
		return nil, err
	}
	if err := b.grantAgents(ctx); err != nil {
		return nil, err
	}
	b.Nodes = layout()
	for _, i := range opts.BehindNAT {
		if err := b.addRouter(ctx, i); err != nil {
			return nil, err
		}
		for _, n := range b.Nodes {
			if n.Cluster == i { // the same host number on the private network
				n.Underlay = nthHost(natLAN(i), int(n.Underlay.As4()[3]))
			}
		}
	}
	b.echo = newEchoServers()
	for _, n := range b.Nodes {
		if err := b.addNode(ctx, n); err != nil {
			return nil, err
		}
	}
	b.checkins.Go(func() { b.checkIn(bgCtx) })
	b.logf("bed ready in %s: %d clusters, %d nodes, %d agents", time.Since(start).Round(time.Millisecond),
		Clusters, len(b.Nodes), len(b.underlay.Processes()))
	return b, nil
}

// StartT starts a bed for a test and stops it in t.Cleanup, with the agents'
// and the server's log tails when the test failed.
func StartT(t testing.TB) *Bed { return StartWithT(t, Options{}) }

// StartWithT is StartT with options; Logf is the test's.
func StartWithT(t testing.TB, opts Options) *Bed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	opts.Logf = t.Logf
	b, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("building the data-plane bed: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b.logFailure(t)
		}
		if err := b.Stop(); err != nil {
			t.Errorf("stopping the data-plane bed: %v", err)
		}
	})
	return b
}

func (b *Bed) logFailure(t testing.TB) {
	for _, p := range b.underlay.Processes() {
		t.Logf("agent %s (%s), last lines:\n%s", p.Name, p.LogPath, p.LogTail(15))
	}
	if b.Server != nil {
		t.Logf("kilo-mesh-apiserver, last lines:\n%s", b.Server.LogTail(40))
	}
}

// Stop stops the agents, removes the namespaces, then stops the control
// planes. It is idempotent.
func (b *Bed) Stop() error {
	if b.stop != nil {
		b.stop()
		b.checkins.Wait()
	}
	var errs []error
	if b.echo != nil {
		b.echo.close()
	}
	if b.underlay != nil {
		errs = append(errs, b.underlay.Close())
	}
	if b.Env != nil {
		errs = append(errs, b.Env.Stop())
	}
	return errors.Join(errs...)
}

// LogDir holds the agents' logs, keys and status files.
func (b *Bed) LogDir() string { return b.underlay.LogDir }

// Node returns the node named name; it panics for an unknown name.
func (b *Bed) Node(name string) *Node {
	i := slices.IndexFunc(b.Nodes, func(n *Node) bool { return n.Name == name })
	if i < 0 {
		panic("dataplane: no node " + name)
	}
	return b.Nodes[i]
}

// checkIn refreshes kilo.squat.ai/last-seen as every running kg does, on
// every node but the stale one, until ctx ends.
func (b *Bed) checkIn(ctx context.Context) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := range Clusters {
			var names []string
			for _, n := range b.Nodes {
				if n.Cluster == i && n.Skip != SkipStale && n.Skip != SkipNoKey {
					names = append(names, n.Name)
				}
			}
			if err := b.Env.TouchKiloNodes(ctx, i, names...); err != nil && ctx.Err() == nil {
				b.logf("checking in the nodes of cluster %d: %v", i, err)
			}
			if !b.servicesEnabled() {
				continue
			}
			if err := b.Env.RenewNodesReady(ctx, i, names...); err != nil && ctx.Err() == nil {
				b.logf("renewing the Ready condition of the nodes of cluster %d: %v", i, err)
			}
		}
	}
}
