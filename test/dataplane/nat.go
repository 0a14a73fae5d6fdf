package dataplane

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Clusters behind NAT (Options.BehindNAT). Each has a network of its own,
// a bridge named lan<i> with 172.31.<i>.0/24, and a router namespace with
// one leg on it (.1) and one on the underlay (RouterAddr). The router
// masquerades what leaves for the underlay and drops every inbound packet
// that is not part of a connection opened from inside, as a home router
// does: nobody can dial the cluster's nodes, which still reach the
// underlay through it. Their kilo.squat.ai/endpoint is their private
// address, as kg would detect it there.

// NATKeepalive is the kilo.squat.ai/persistent-keepalive of the nodes
// behind NAT: the keepalives that open their routers for the tunnels.
const NATKeepalive = 5

// natLAN is the private network of cluster i.
func natLAN(i int) netip.Prefix { return netip.MustParsePrefix(fmt.Sprintf("172.31.%d.0/24", i)) }

// RouterAddr is the underlay address of cluster i's router.
func RouterAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{203, 0, 113, byte(200 + i)}) }

func lanBridge(i int) string { return fmt.Sprintf("lan%d", i) }

// natTable is the router's nftables ruleset: masquerade outward, and
// nothing in that was not asked for. forwards are the open ports, one
// "udp dport P dnat to A:P'" line each.
func natTable(i int, forwards []string) string {
	var dnat strings.Builder
	for _, f := range forwards {
		fmt.Fprintf(&dnat, "\t\tiifname \"eth0\" %s\n", f)
	}
	return fmt.Sprintf(`flush ruleset
table ip nat {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
%s	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "eth0" ip saddr %s masquerade
	}
}
table inet filter {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		ct status dnat accept
		iifname "lan0" oifname "eth0" accept
	}
	chain input {
		type filter hook input priority filter; policy drop;
		ct state established,related accept
		iifname "lo" accept
		iifname "lan0" accept
	}
}
`, dnat.String(), natLAN(i))
}

// addRouter makes cluster i's private network and its router.
func (b *Bed) addRouter(ctx context.Context, i int) error {
	if err := b.underlay.AddBridge(ctx, lanBridge(i)); err != nil {
		return err
	}
	ns, err := b.underlay.AddHost(ctx, fmt.Sprintf("router%d", i), netip.PrefixFrom(RouterAddr(i), 24))
	if err != nil {
		return err
	}
	gw := netip.PrefixFrom(nthHost(natLAN(i), 1), 24)
	if err := b.underlay.AddLink(ctx, ns, lanBridge(i), "lan0", gw); err != nil {
		return err
	}
	if err := b.underlay.Exec(ctx, ns, "", "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"); err != nil {
		return err
	}
	if err := b.setRouter(ctx, i, nil); err != nil {
		return err
	}
	b.routers[i] = ns
	return nil
}

// setRouter loads cluster i's router rules with forwards open.
func (b *Bed) setRouter(ctx context.Context, i int, forwards []string) error {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return fmt.Errorf("simulating NAT needs nftables' nft: apt-get install --no-install-recommends nftables")
	}
	ns := b.underlay.Namespace(fmt.Sprintf("router%d", i))
	return b.underlay.Exec(ctx, ns, natTable(i, forwards), nft, "-f", "-")
}

// natHost puts node n, of a cluster behind NAT, on its cluster's private
// network with a route to the underlay through the router.
func (b *Bed) natHost(ctx context.Context, n *Node, addrs ...netip.Prefix) (string, error) {
	ns, err := b.underlay.AddHostOn(ctx, lanBridge(n.Cluster), n.Name, addrs...)
	if err != nil {
		return "", err
	}
	underlay := netip.MustParsePrefix("203.0.113.0/24")
	return ns, b.underlay.IP(ctx, ns, fmt.Sprintf("route add %s via %s", underlay, nthHost(natLAN(n.Cluster), 1)))
}

// behindNAT tells whether cluster i sits behind a router.
func (b *Bed) behindNAT(i int) bool {
	_, ok := b.routers[i]
	return ok
}

// OpenRouter forwards one underlay port of cluster i's router to each
// leader's WireGuard port, in order (WireGuardPort, WireGuardPort+1, ...),
// as a user opening their router would, and returns the endpoints others
// can dial now, by leader. The bed's nodes behind NAT keep their private
// kilo.squat.ai/endpoint: the endpoint to dial is the user's to set
// (kilo.squat.ai/clustermesh-endpoint).
func (b *Bed) OpenRouter(ctx context.Context, i int, leaders ...*Node) (map[*Node]netip.AddrPort, error) {
	out := map[*Node]netip.AddrPort{}
	var forwards []string
	for k, n := range leaders {
		port := WireGuardPort + k
		forwards = append(forwards, fmt.Sprintf("udp dport %d dnat to %s:%d", port, n.Underlay, WireGuardPort))
		out[n] = netip.AddrPortFrom(RouterAddr(i), uint16(port))
	}
	return out, b.setRouter(ctx, i, forwards)
}

// CloseRouter takes back every forward of cluster i's router.
func (b *Bed) CloseRouter(ctx context.Context, i int) error { return b.setRouter(ctx, i, nil) }

// SetClusterMeshEndpoint sets (or, with an invalid ap, removes) node n's
// kilo.squat.ai/clustermesh-endpoint.
func (b *Bed) SetClusterMeshEndpoint(ctx context.Context, n *Node, ap netip.AddrPort) error {
	var v *string
	if ap.IsValid() {
		v = ptr(ap.String())
	}
	return b.patchAnnotations(ctx, n, map[string]*string{"kilo.squat.ai/clustermesh-endpoint": v})
}

// StopAgent stops kg on node n, as a crash or a stopped node would: its
// WireGuard device goes and nothing passes through it. Its Node keeps
// checking in (the bed does that), so the plan does not change.
func (b *Bed) StopAgent(n *Node) error {
	if n.agent == nil {
		return fmt.Errorf("no agent runs on %s", n.Name)
	}
	return n.agent.Stop()
}

// StartAgent starts the stopped kg of node n again.
func (b *Bed) StartAgent(n *Node) error { return n.agent.Restart() }

// WireGuardPeers are the public keys of the WireGuard peers n's agent
// configured last: a leader's tunnels.
func (n *Node) WireGuardPeers() ([]string, error) {
	s, err := n.AgentStatus()
	if err != nil {
		return nil, err
	}
	return s.PeerKeys, nil
}

// DeclareNAT makes every later ApplyMesh declare cluster i behindNAT (or not).
func (b *Bed) DeclareNAT(i int, nat bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.natSpec[i] = nat
}

// DeclareRelay makes every later ApplyMesh name cluster i as
// spec.relayCluster; -1 names none.
func (b *Bed) DeclareRelay(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.relay = ""
	if i >= 0 {
		b.relay = ClusterName(i)
	}
}

func (b *Bed) declaredNAT(i int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.natSpec[i]
}

func (b *Bed) relayCluster() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.relay
}

// SetForwardFirewall gives node n a FORWARD chain that drops what it is
// not told to pass, as Docker or a distribution may set it, with the
// rules Kilo's --iptables-forward-rules adds on a leader: to and from its
// own location's pod networks (own). With relay, also what a relaying
// leader needs: from kilo0 to kilo0.
func (b *Bed) SetForwardFirewall(ctx context.Context, n *Node, own []netip.Prefix, relay bool) error {
	var rules strings.Builder
	for _, p := range own {
		family := "ip"
		if p.Addr().Is6() {
			family = "ip6"
		}
		fmt.Fprintf(&rules, "\t\t%s saddr %s accept\n\t\t%s daddr %s accept\n", family, p, family, p)
	}
	if relay {
		rules.WriteString("\t\tiifname \"kilo0\" oifname \"kilo0\" accept\n")
	}
	nft, err := exec.LookPath("nft")
	if err != nil {
		return fmt.Errorf("nftables' nft: %w", err)
	}
	table := fmt.Sprintf("table inet kilofwd\ndelete table inet kilofwd\ntable inet kilofwd {\n\tchain forward {\n\t\ttype filter hook forward priority filter; policy drop;\n%s\t}\n}\n", rules.String())
	return b.underlay.Exec(ctx, n.Namespace, table, nft, "-f", "-")
}

// ClearForwardFirewall removes what SetForwardFirewall set on n.
func (b *Bed) ClearForwardFirewall(ctx context.Context, n *Node) error {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return fmt.Errorf("nftables' nft: %w", err)
	}
	return b.underlay.Exec(ctx, n.Namespace, "table inet kilofwd\ndelete table inet kilofwd\n", nft, "-f", "-")
}

// LocationPodCIDRs are the pod CIDRs of the nodes of n's location (Kilo's
// segment), whose traffic Kilo's forward rules accept on its leader.
func LocationPodCIDRs(b *Bed, n *Node) []netip.Prefix {
	var out []netip.Prefix
	for _, o := range b.Nodes {
		if o.Cluster == n.Cluster && o.Location == n.Location {
			out = append(out, o.PodCIDR)
		}
	}
	return out
}
