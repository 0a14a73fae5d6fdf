//go:build dataplane

package dataplane_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/dataplane"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The relay bed: cluster-1 and cluster-2 each behind a NAT router of their
// own, cluster-0 (the host) on the open underlay.
const (
	hub    = 0
	spokeB = importer // 1: imports what spokeC exports
	spokeC = exporter // 2
)

// TestRelayDataplane proves with packets that two clusters behind NAT,
// which cannot dial each other, reach each other through the hub with
// only the Peers the server writes: pods and a multi-cluster service of
// cluster-2 from cluster-1, with no tunnel between the two. With the
// hub's relaying leader stopped the relayed pairs fail and the direct ones
// work; once cluster-2's router forwards its WireGuard ports and its entry
// says so, its pairs go direct (shown with the relay stopped), and back.
func TestRelayDataplane(t *testing.T) {
	b := dataplane.StartWithT(t, dataplane.Options{BehindNAT: []int{spokeB, spokeC}})
	ctx := context.Background()
	relayed := dataplane.Both(b.ClusterNodes(spokeB), b.ClusterNodes(spokeC))
	var relay *dataplane.Node // the leader of the hub's relaying group
	var proxy *dataplane.KubeProxy
	t.Cleanup(func() {
		if proxy != nil {
			if err := proxy.Stop(context.Background()); err != nil {
				t.Errorf("stopping the kube-proxy stand-in: %v", err)
			}
		}
	})

	steps := []struct {
		name string
		f    func(t *testing.T)
	}{
		{"two clusters behind NAT reach each other, and the hub, through the hub", func(t *testing.T) {
			b.DeclareNAT(spokeB, true)
			b.DeclareNAT(spokeC, true)
			if err := b.ApplyMesh(ctx, hub, spokeB, spokeC); err != nil {
				t.Fatal(err)
			}
			var group string
			framework.EventuallyT(t, converge, "a plan relaying cluster-1 and cluster-2 via cluster-0", func() error {
				p, err := b.Plan(ctx)
				if err != nil {
					return err
				}
				r := p.Relay
				if r == nil || r.Cluster != dataplane.ClusterName(hub) || r.Basis != meshv1alpha1.RelayBasisChosen || len(p.Paths) != 1 || p.Paths[0].Kind != meshv1alpha1.PathRelayed {
					return fmt.Errorf("relay %+v, paths %+v", r, p.Paths)
				}
				for _, g := range dataplane.ClusterPlan(p, hub).Groups {
					if g.Name == r.Group {
						relay, group = b.Node(g.Leader), g.Name
					}
				}
				return nil
			})
			t.Logf("cluster-0 relays through its group %s, leader %s", group, relay.Name)
			placeServices(t, b)
			connected(t, b, "cluster-1 and cluster-2 behind NAT, relayed via cluster-0")
		}},
		{"the two have no tunnel to each other", func(t *testing.T) {
			noTunnel(t, b, spokeB, spokeC)
			noTunnel(t, b, spokeC, spokeB)
		}},
		{"a multi-cluster service of cluster-2 answers a pod of cluster-1 through the hub", func(t *testing.T) {
			if err := b.EnableServices(ctx, spokeB, spokeC); err != nil {
				t.Fatal(err)
			}
			if err := b.ApplyMesh(ctx, hub, spokeB, spokeC); err != nil {
				t.Fatal(err)
			}
			if err := b.CreateNamespaces(ctx, svcNS, spokeB, spokeC); err != nil {
				t.Fatal(err)
			}
			at := b.Node(fmt.Sprintf("c%d-a2", spokeC))
			backend, err := b.StartBackend(ctx, at, svcNS, svcName, "echo-1", podAddr(at, 20))
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Export(ctx, spokeC, svcNS, svcName); err != nil {
				t.Fatal(err)
			}
			imp, err := importedAt(ctx, b, follow)
			if err != nil {
				t.Fatal(err)
			}
			clientNode := b.Node(fmt.Sprintf("c%d-a2", spokeB))
			if proxy, err = b.StartKubeProxy(ctx, clientNode); err != nil {
				t.Fatal(err)
			}
			service := netip.AddrPortFrom(netip.MustParseAddr(imp.ClusterIP), 80)
			took, _ := reachedBy(t, proxy, dataplane.Endpoint{Node: clientNode, Addr: clientNode.Pod}, service, backend, converge)
			t.Logf("%s reached %s/%s through the import %s, relayed via cluster-0, %s after the stand-in started", clientNode.Name, at.Name, backend.Pod, service, took.Round(time.Millisecond))
			noTunnel(t, b, spokeB, spokeC)
		}},
		{"the hub forwards between the two only where its firewall lets kilo0 forward to kilo0", func(t *testing.T) {
			// What Kilo's --iptables-forward-rules adds on a leader: its own
			// location's pod networks, to and from; a relayed packet is neither.
			own := dataplane.LocationPodCIDRs(b, relay)
			if err := b.SetForwardFirewall(ctx, relay, own, false); err != nil {
				t.Fatal(err)
			}
			cutOff(t, b, relayed)
			if err := b.SetForwardFirewall(ctx, relay, own, true); err != nil {
				t.Fatal(err)
			}
			if failed := dataplane.Failed(b.Reach(ctx, relayed, converge)); len(failed) > 0 {
				t.Fatalf("with kilo0 -> kilo0 accepted, %d relayed pairs fail:\n%s", len(failed), dataplane.DescribeFailures(failed))
			}
			t.Logf("FORWARD policy drop with Kilo's rules for %v: relayed pairs cut off; with iifname kilo0 oifname kilo0 accept: answered", own)
			if err := b.ClearForwardFirewall(ctx, relay); err != nil {
				t.Fatal(err)
			}
		}},
		{"negative control: the hub's relaying leader stopped, relayed pairs fail and direct ones work", func(t *testing.T) {
			if err := b.StopAgent(relay); err != nil {
				t.Fatal(err)
			}
			cutOff(t, b, relayed)
			direct := dataplane.Both(b.ClusterNodes(spokeB, spokeC), notInGroupOf(b, relay))
			if len(direct) == 0 {
				t.Fatal("no direct pair to the hub's other group")
			}
			if failed := dataplane.Failed(b.Reach(ctx, direct, converge)); len(failed) > 0 {
				t.Fatalf("with the relay stopped, %d direct pairs fail too:\n%s", len(failed), dataplane.DescribeFailures(failed))
			}
			t.Logf("relay %s stopped: %d relayed pairs cut off, %d direct pairs to the hub's other group answer", relay.Name, len(relayed), len(direct))
			if err := b.StartAgent(relay); err != nil {
				t.Fatal(err)
			}
			// The spokes' sessions with the old relay are gone: WireGuard
			// handshakes again once data waits 15 s for an answer.
			start := time.Now()
			if failed := dataplane.Failed(b.Reach(ctx, relayed, converge)); len(failed) > 0 {
				t.Fatalf("the relay started again, yet %d relayed pairs fail:\n%s", len(failed), dataplane.DescribeFailures(failed))
			}
			t.Logf("relay %s started again: every relayed pair answered %s after", relay.Name, time.Since(start).Round(time.Millisecond))
		}},
		{"cluster-2 can be dialled: its pairs go direct (the relay forwarding nothing), and back through the relay", func(t *testing.T) {
			var toDirect, toRelayed, rttDirect, rttRelayed []time.Duration
			own := dataplane.LocationPodCIDRs(b, relay)
			for k := range runs(t) {
				// The relay forwards nothing meanwhile (its sessions stay):
				// only a direct tunnel can answer.
				if err := b.SetForwardFirewall(ctx, relay, own, false); err != nil {
					t.Fatal(err)
				}
				took := reachable(t, b)
				toDirect = append(toDirect, took)
				rttDirect = append(rttDirect, medianRTT(t, b.Reach(ctx, relayed, converge)))
				tunnel(t, b, spokeB, spokeC)
				if err := b.ClearForwardFirewall(ctx, relay); err != nil {
					t.Fatal(err)
				}
				took = behindNATAgain(t, b, relayed)
				toRelayed = append(toRelayed, took)
				rttRelayed = append(rttRelayed, medianRTT(t, b.Reach(ctx, relayed, converge)))
				t.Logf("run %d: direct %s after the entry changed, relayed again %s after", k+1, toDirect[k].Round(time.Millisecond), took.Round(time.Millisecond))
			}
			t.Logf("relay figures, %d runs: round trip between the pods of cluster-1 and cluster-2 relayed %s, direct %s; traffic followed to direct in %s, to relayed in %s",
				len(toDirect), medianMaxRTT(rttRelayed), medianMaxRTT(rttDirect), medianMax(toDirect), medianMax(toRelayed))
			connected(t, b, "relayed again")
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.f) {
			t.FailNow()
		}
	}
}

// medianMaxRTT summarises round trips, to the microsecond.
func medianMaxRTT(ds []time.Duration) string {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return fmt.Sprintf("median %s, max %s", ds[len(ds)/2].Round(time.Microsecond), ds[len(ds)-1].Round(time.Microsecond))
}

// medianRTT is the median round trip of the answered results; it fails
// the test on any failed one.
func medianRTT(t *testing.T, results []dataplane.Result) time.Duration {
	t.Helper()
	if failed := dataplane.Failed(results); len(failed) > 0 {
		t.Fatalf("%d pairs failed:\n%s", len(failed), dataplane.DescribeFailures(failed))
	}
	var rtts []time.Duration
	for _, r := range results {
		rtts = append(rtts, r.RTT)
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2]
}

// leaderKeys are the public keys of cluster i's leaders.
func leaderKeys(t *testing.T, b *dataplane.Bed, i int) (leaders []*dataplane.Node, keys []string) {
	t.Helper()
	for _, n := range b.ClusterNodes(i) {
		s, err := n.AgentStatus()
		if err != nil {
			t.Fatal(err)
		}
		if s.IsLeader {
			leaders, keys = append(leaders, n), append(keys, n.PublicKey())
		}
	}
	return leaders, keys
}

// tunnels lists, as "node -> key", the leaders of cluster to that each
// leader of cluster from has as a WireGuard peer, and those it lacks.
func tunnels(t *testing.T, b *dataplane.Bed, from, to int) (have, lack []string, err error) {
	t.Helper()
	leaders, _ := leaderKeys(t, b, from)
	_, keys := leaderKeys(t, b, to)
	for _, n := range leaders {
		peers, err := n.WireGuardPeers()
		if err != nil {
			return nil, nil, err
		}
		for _, k := range keys {
			if slices.Contains(peers, k) {
				have = append(have, n.Name+" -> "+k)
			} else {
				lack = append(lack, n.Name+" -> "+k)
			}
		}
	}
	return have, lack, nil
}

// noTunnel fails if a leader of cluster from has a leader of cluster to as
// a WireGuard peer.
func noTunnel(t *testing.T, b *dataplane.Bed, from, to int) {
	t.Helper()
	have, _, err := tunnels(t, b, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(have) > 0 {
		t.Errorf("tunnels from %s to %s: %v", dataplane.ClusterName(from), dataplane.ClusterName(to), have)
	}
}

// tunnel waits until every leader of cluster from has every leader of
// cluster to as a WireGuard peer.
func tunnel(t *testing.T, b *dataplane.Bed, from, to int) {
	t.Helper()
	framework.EventuallyT(t, follow, "direct tunnels", func() error {
		_, lack, err := tunnels(t, b, from, to)
		if err == nil && len(lack) > 0 {
			err = fmt.Errorf("no tunnel %v", lack)
		}
		return err
	})
}

// cutOff waits until none of pairs answers.
func cutOff(t *testing.T, b *dataplane.Bed, pairs []dataplane.Pair) {
	t.Helper()
	err := framework.Eventually(context.Background(), 0, follow, func(context.Context) error {
		if answered := b.Unreachable(pairs, 1500*time.Millisecond); len(answered) > 0 {
			return &answeredError{answered}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("still answered: %v", err)
	}
}

// notInGroupOf are the hub's nodes outside n's group.
func notInGroupOf(b *dataplane.Bed, n *dataplane.Node) []*dataplane.Node {
	return slices.DeleteFunc(b.ClusterNodes(n.Cluster), func(o *dataplane.Node) bool { return b.Group(o) == b.Group(n) })
}

// reachable opens cluster-2's router to its leaders, says so in their
// kilo.squat.ai/clustermesh-endpoint and in the mesh, and returns how long
// after the mesh changed cluster-1 and cluster-2 answer each other.
func reachable(t *testing.T, b *dataplane.Bed) time.Duration {
	t.Helper()
	ctx := context.Background()
	leaders, _ := leaderKeys(t, b, spokeC)
	open, err := b.OpenRouter(ctx, spokeC, leaders...)
	if err != nil {
		t.Fatal(err)
	}
	for n, ap := range open {
		if err := b.SetClusterMeshEndpoint(ctx, n, ap); err != nil {
			t.Fatal(err)
		}
	}
	b.DeclareNAT(spokeC, false)
	start := time.Now()
	if err := b.ApplyMesh(ctx, hub, spokeB, spokeC); err != nil {
		t.Fatal(err)
	}
	pairs := dataplane.Both(b.ClusterNodes(spokeB), b.ClusterNodes(spokeC))
	tunnel(t, b, spokeB, spokeC)
	configured := time.Since(start)
	if failed := dataplane.Failed(b.Reach(ctx, pairs, follow)); len(failed) > 0 {
		t.Fatalf("cluster-2 can be dialled, yet %d pairs fail without the relay:\n%s%s", len(failed), dataplane.DescribeFailures(failed), b.DescribePlan(ctx))
	}
	took := time.Since(start)
	t.Logf("to direct: cluster-1's leaders had tunnels to cluster-2 %s after the change, every pair answered %s after", configured.Round(time.Millisecond), took.Round(time.Millisecond))
	p, err := b.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Relay != nil || len(p.Paths) > 0 {
		t.Errorf("one cluster behind NAT, yet relay %+v, paths %+v", p.Relay, p.Paths)
	}
	return took
}

// behindNATAgain closes cluster-2's router and puts it behind NAT in the
// mesh again, and returns how long after the mesh changed cluster-1's
// leaders hold no tunnel to it and the pairs answer: through the relay.
func behindNATAgain(t *testing.T, b *dataplane.Bed, pairs []dataplane.Pair) time.Duration {
	t.Helper()
	ctx := context.Background()
	if err := b.CloseRouter(ctx, spokeC); err != nil {
		t.Fatal(err)
	}
	leaders, _ := leaderKeys(t, b, spokeC)
	for _, n := range leaders {
		if err := b.SetClusterMeshEndpoint(ctx, n, netip.AddrPort{}); err != nil {
			t.Fatal(err)
		}
	}
	b.DeclareNAT(spokeC, true)
	start := time.Now()
	if err := b.ApplyMesh(ctx, hub, spokeB, spokeC); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, follow, "no tunnel from cluster-1 to cluster-2", func() error {
		have, _, err := tunnels(t, b, spokeB, spokeC)
		if err == nil && len(have) > 0 {
			err = fmt.Errorf("tunnels left: %v", have)
		}
		return err
	})
	configured := time.Since(start)
	results := b.Reach(ctx, pairs, follow)
	if failed := dataplane.Failed(results); len(failed) > 0 {
		t.Fatalf("behind NAT again, %d pairs fail:\n%s%s", len(failed), dataplane.DescribeFailures(failed), b.DescribePlan(ctx))
	}
	took := time.Since(start)
	for _, r := range results {
		if r.First.Sub(start) > 2*time.Second {
			t.Logf("  slow: %s answered %s after the change", r.Pair, r.First.Sub(start).Round(time.Millisecond))
		}
	}
	t.Logf("to relayed: cluster-1's leaders dropped their tunnels to cluster-2 %s after the change, every pair answered %s after", configured.Round(time.Millisecond), took.Round(time.Millisecond))
	return took
}
