package planner

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// entry returns the spec entry of a cluster, for a test to change.
func entry(in *Input, cluster string) *meshv1alpha1.ClusterEntry {
	for i := range in.Spec.Clusters {
		if in.Spec.Clusters[i].Name == cluster {
			return &in.Spec.Clusters[i]
		}
	}
	panic("no cluster " + cluster)
}

func annotate(n *corev1.Node, kv ...string) {
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "<delete>" {
			delete(n.Annotations, kv[i])
			continue
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[kv[i]] = kv[i+1]
	}
}

func issueReasons(list []meshv1alpha1.PlanIssue) []string {
	var out []string
	for _, i := range list {
		out = append(out, i.Reason)
	}
	return out
}

func findIssue(list []meshv1alpha1.PlanIssue, reason string) (meshv1alpha1.PlanIssue, bool) {
	for _, i := range list {
		if i.Reason == reason {
			return i, true
		}
	}
	return meshv1alpha1.PlanIssue{}, false
}

func groupPlan(t testing.TB, p *Plan, cluster, name string) meshv1alpha1.GroupPlan {
	t.Helper()
	c, _ := p.Cluster(cluster)
	for _, g := range c.Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %s in %s", name, cluster)
	return meshv1alpha1.GroupPlan{}
}

// TestNodeDecisions covers every skip reason: each case changes the
// fixtures and names the node whose decision it checks.
func TestNodeDecisions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutate   func(t *testing.T, in *Input)
		cluster  string
		node     string
		included bool
		reason   string
		group    string
		role     meshv1alpha1.NodeRole
		message  string
	}{
		{name: "leader of a location", cluster: "eu", node: "fra-1", included: true, reason: ReasonAdvertised, group: "location:fra", role: meshv1alpha1.NodeRoleLeader},
		{name: "member of a location", cluster: "eu", node: "fra-2", included: true, reason: ReasonAdvertised, group: "location:fra", role: meshv1alpha1.NodeRoleMember, message: "led by fra-1"},
		{name: "no internal IP: its own group", cluster: "eu", node: "edge-1", included: true, reason: ReasonAdvertised, group: "node:edge-1", role: meshv1alpha1.NodeRoleLeader},
		{name: "full granularity: its own group", cluster: "us", node: "us-2", included: true, reason: ReasonAdvertised, group: "node:us-2", role: meshv1alpha1.NodeRoleLeader},
		{name: "kg silent", cluster: "eu", node: "fra-3", reason: ReasonNotReady, message: "1h40m0s ago"},
		{name: "kg never ran", cluster: "eu", node: "new-1", reason: ReasonNoPublicKey},
		{name: "pod CIDR outside podCIDRs: skipped, still in its Kilo group", cluster: "eu", node: "rogue-1", reason: ReasonPodCIDROutsideDeclared, group: "location:ams", role: meshv1alpha1.NodeRoleMember},
		{
			name: "invalid key", cluster: "us", node: "us-1", reason: ReasonInvalidPublicKey,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-1"), kilov1alpha1.AnnotationKey, "aGVsbG8=")
			},
		},
		{
			name: "no pod CIDR", cluster: "us", node: "us-1", reason: ReasonNoPodCIDR,
			mutate: func(t *testing.T, in *Input) { node(t, *in, "us", "us-1").Spec.PodCIDR = "" },
		},
		{
			name: "no Kilo endpoint", cluster: "us", node: "us-1", reason: ReasonNoEndpoint,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-1"), kilov1alpha1.AnnotationEndpoint, "<delete>")
			},
		},
		{
			name: "leader's pod CIDR outside podCIDRs: it still leads", cluster: "eu", node: "ams-2", reason: ReasonPodCIDROutsideDeclared,
			group: "location:ams", role: meshv1alpha1.NodeRoleLeader, message: "still leads location:ams",
			mutate: func(t *testing.T, in *Input) { node(t, *in, "eu", "ams-2").Spec.PodCIDR = "10.99.5.0/24" },
		},
		{
			name: "two nodes with one pod CIDR", cluster: "eu", node: "ams-1", reason: ReasonDuplicatePodCIDR, group: "location:ams", role: meshv1alpha1.NodeRoleMember,
			mutate: func(t *testing.T, in *Input) { node(t, *in, "eu", "ams-1").Spec.PodCIDR = "10.10.1.0/24" },
		},
		{
			name: "malformed clustermesh-endpoint on the leader stops the group", cluster: "eu", node: "fra-2", reason: ReasonMalformedEndpoint, group: "location:fra", role: meshv1alpha1.NodeRoleMember,
			message: "group location:fra is not exported",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "fra-1"), kilov1alpha1.AnnotationClusterMeshEndpoint, "fra.example.com")
			},
		},
		{
			name: "malformed force-endpoint is not skipped over", cluster: "us", node: "us-1", reason: ReasonMalformedEndpoint, group: "node:us-1", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-1"), kilov1alpha1.AnnotationForceEndpoint, "0.0.0.0:51820")
			},
		},
		{
			name: "malformed ExternalIP is not skipped over", cluster: "us", node: "us-3", reason: ReasonMalformedEndpoint,
			group: "node:us-3", role: meshv1alpha1.NodeRoleLeader, message: "ExternalIP",
			mutate: func(t *testing.T, in *Input) {
				n := node(t, *in, "us", "us-3")
				n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "54.0.0.13.1"})
			},
		},
		{
			name: "roaming without keepalive", cluster: "us", node: "us-3", reason: ReasonNoEndpointNoKeepalive, group: "node:us-3", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-3"), kilov1alpha1.AnnotationClusterMeshEndpoint, "-")
			},
		},
		{
			name: "roaming with the leader's keepalive", cluster: "us", node: "us-3", included: true, reason: ReasonAdvertised, group: "node:us-3", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-3"), kilov1alpha1.AnnotationClusterMeshEndpoint, "-", kilov1alpha1.AnnotationPersistentKeepalive, "20")
			},
		},
		{
			name: "leader's wireguard-ip outside wireguardCIDR", cluster: "eu", node: "ams-1", reason: ReasonWireGuardIPOutsideCIDR, group: "location:ams", role: meshv1alpha1.NodeRoleMember,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "ams-2"), kilov1alpha1.AnnotationWireGuardIP, "10.4.0.1/16")
			},
		},
		{
			name: "wireguardCIDR too small", cluster: "eu", node: "edge-1", reason: ReasonWireGuardCIDRExhausted, group: "node:edge-1", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) {
				entry(in, "eu").WireguardCIDR = "10.14.0.0/31"
				annotate(node(t, *in, "eu", "fra-1"), kilov1alpha1.AnnotationWireGuardIP, "<delete>")
				annotate(node(t, *in, "eu", "edge-1"), kilov1alpha1.AnnotationWireGuardIP, "<delete>")
			},
		},
		{
			name: "wireguardCIDR malformed", cluster: "us", node: "us-1", reason: ReasonInvalidWireGuardCIDR, group: "node:us-1", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) { entry(in, "us").WireguardCIDR = "10.24.0.0" },
		},
		{
			name: "two clusters claiming one pod CIDR", cluster: "us", node: "us-1", reason: ReasonCIDRClaimedTwice, group: "node:us-1", role: meshv1alpha1.NodeRoleLeader,
			message: "pod CIDR of node fra-1",
			mutate: func(t *testing.T, in *Input) {
				entry(in, "us").PodCIDRs = []string{"10.20.0.0/16", "10.10.1.0/24"}
				node(t, *in, "us", "us-1").Spec.PodCIDR = "10.10.1.0/24"
			},
		},
		{
			name: "a Node the member caches keep only the name of", cluster: "us", node: "us-2", reason: ReasonNodeTooLarge,
			message: "weigh 130 KiB",
			mutate: func(t *testing.T, in *Input) {
				n := node(t, *in, "us", "us-2")
				n.Labels, n.Spec = nil, corev1.NodeSpec{}
				n.Annotations = map[string]string{meshv1alpha1.AnnotationNodeTooLarge: "the Node's labels weigh 130 KiB"}
			},
		},
		{
			name: "duplicate node names", cluster: "us", node: "us-2", reason: ReasonDuplicateNode,
			mutate: func(t *testing.T, in *Input) {
				snap := in.Clusters["us"]
				dup := node(t, *in, "us", "us-2").DeepCopy()
				snap.Nodes = append(snap.Nodes, dup)
				in.Clusters["us"] = snap
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			if tc.mutate != nil {
				tc.mutate(t, &in)
			}
			p := mustCompute(t, in)
			d := decision(t, p, tc.cluster, tc.node)
			if d.Included != tc.included || d.Reason != tc.reason || d.Group != tc.group || d.Role != tc.role {
				t.Fatalf("decision %+v; want included=%v reason=%s group=%q role=%q", d, tc.included, tc.reason, tc.group, tc.role)
			}
			if !strings.Contains(d.Message, tc.message) || d.Message == "" {
				t.Errorf("message %q does not contain %q", d.Message, tc.message)
			}
			checkPlanInvariants(t, in, p)
		})
	}
}

func TestSummaryCountsSkippedByReason(t *testing.T) {
	p := mustCompute(t, testInput(t))
	c, _ := p.Cluster("eu")
	s := c.Summary
	if s.Nodes != 8 || s.KiloReadyNodes != 6 || s.AdvertisedNodes != 5 || s.Groups != 3 || s.ReadyGroups != 3 {
		t.Errorf("summary %+v", s)
	}
	want := []meshv1alpha1.ReasonCount{{Reason: ReasonNoPublicKey, Count: 1}, {Reason: ReasonNotReady, Count: 1}, {Reason: ReasonPodCIDROutsideDeclared, Count: 1}}
	if !slices.Equal(s.SkippedByReason, want) {
		t.Errorf("skippedByReason %+v, want %+v", s.SkippedByReason, want)
	}
}

// TestPeerContent checks what Kilo needs in each Peer, in every granularity.
func TestPeerContent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mutate    func(t *testing.T, in *Input)
		target    string
		source    string
		group     string
		allowed   string // comma-joined, in order; "" to skip the check
		endpoint  string // dns:host:port or ip:addr:port, "" for none
		keepalive int
		leader    string
	}{
		{
			name:   "location group: members in name order, dual stack, internal IPs, WireGuard IP, location IPs",
			target: "us", source: "eu", group: "location:fra", leader: "fra-1", endpoint: "ip:203.0.113.11:51820",
			allowed: "10.10.1.0/24,fd10::100/120,192.168.1.11/32,10.10.2.0/24,fd10::200/120,192.168.1.12/32,10.14.0.2/32,192.168.50.0/24",
		},
		{
			name:   "the non-Ready and the rogue members are left out; the service CIDR rides along",
			target: "us", source: "eu", group: "location:ams", leader: "ams-2", endpoint: "ip:198.51.100.22:51820",
			allowed: "10.10.4.0/24,fd10::400/120,192.168.2.21/32,10.10.5.0/24,fd10::500/120,192.168.2.22/32,10.14.0.1/32,10.110.0.0/16",
		},
		{
			name: "DNS force-endpoint goes in dns", target: "home", source: "eu", group: "node:edge-1", leader: "edge-1",
			endpoint: "dns:edge-1.eu.example.net:51821", allowed: "10.10.6.0/24,fd10::600/120,10.14.0.3/32",
		},
		{
			name: "full: ExternalIP, IPv4 first, with the cluster's port", target: "eu", source: "us", group: "node:us-1", leader: "us-1",
			endpoint: "ip:54.0.0.11:51999", allowed: "10.20.1.0/24,10.0.0.11/32,10.24.0.1/32,10.120.0.0/16,172.24.0.0/16",
			mutate: func(t *testing.T, in *Input) { entry(in, "us").WireguardPort = 51999 },
		},
		{
			name: "IPv6 ExternalIP when there is no IPv4", target: "eu", source: "us", group: "node:us-1", leader: "us-1", endpoint: "ip:2600:1f18::11:51820",
			mutate: func(t *testing.T, in *Input) {
				n := node(t, *in, "us", "us-1")
				n.Status.Addresses = slices.DeleteFunc(n.Status.Addresses, func(a corev1.NodeAddress) bool { return a.Address == "54.0.0.11" })
			},
		},
		{
			name: "clustermesh-endpoint beats everything", target: "eu", source: "us", group: "node:us-2", leader: "us-2", endpoint: "dns:us-2.mesh.example.com:51820",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-2"), kilov1alpha1.AnnotationForceEndpoint, "198.51.100.2:51820")
			},
		},
		{
			name: "force-endpoint beats ExternalIP", target: "eu", source: "us", group: "node:us-1", leader: "us-1", endpoint: "ip:198.51.100.1:4500",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-1"), kilov1alpha1.AnnotationForceEndpoint, "198.51.100.1:4500")
			},
		},
		{
			name: "kg's endpoint last", target: "eu", source: "us", group: "node:us-3", leader: "us-3", endpoint: "ip:10.0.0.13:51820",
		},
		{
			name: "NATed cluster: spec keepalive, no internal IPs without nodeCIDRs", target: "eu", source: "home", group: "location:home", leader: "home-1",
			endpoint: "ip:192.168.178.10:51820", keepalive: 25, allowed: "10.30.1.0/24,10.30.2.0/24,10.30.3.0/24,10.34.0.1/32",
		},
		{
			name: "keepalive from the leader when the spec has none", target: "eu", source: "home", group: "location:home", leader: "home-1", keepalive: 25,
			mutate: func(t *testing.T, in *Input) { entry(in, "home").PersistentKeepalive = 0 },
		},
		{
			name: "roaming group", target: "us", source: "home", group: "location:home", leader: "home-1", keepalive: 25,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "home", "home-1"), kilov1alpha1.AnnotationClusterMeshEndpoint, "-")
			},
		},
		{
			name: "leader change: key and endpoint follow", target: "us", source: "eu", group: "location:fra", leader: "fra-2", endpoint: "ip:192.168.1.12:51820",
			// fra-1's allowed-location-ips leave with it: kg only reads Ready nodes.
			allowed: "10.10.2.0/24,fd10::200/120,192.168.1.12/32,10.14.0.2/32",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "fra-1"), kilov1alpha1.AnnotationLastSeen, "1795170000")
			},
		},
		{
			name: "spec Full on a location cluster: one Peer per node", target: "us", source: "eu", group: "node:fra-2", leader: "fra-2",
			// node:ams-1, node:ams-2, node:edge-1, node:fra-1, node:fra-2: the fifth address.
			endpoint: "ip:192.168.1.12:51820", allowed: "10.10.2.0/24,fd10::200/120,192.168.1.12/32,10.14.0.5/32",
			mutate: func(t *testing.T, in *Input) { entry(in, "eu").Granularity = meshv1alpha1.GranularityFull },
		},
		{
			name: "spec Cross groups like Full", target: "home", source: "us", group: "node:us-3", leader: "us-3",
			mutate: func(t *testing.T, in *Input) { entry(in, "us").Granularity = meshv1alpha1.GranularityCross },
		},
		{
			name: "spec Location on a full cluster: one group for the empty location", target: "eu", source: "us", group: "location:us-east-1", leader: "us-1",
			allowed: "10.20.1.0/24,10.0.0.11/32,10.20.2.0/24,10.0.0.12/32,10.20.3.0/24,10.0.0.13/32,10.24.0.1/32,10.120.0.0/16,172.24.0.0/16",
			mutate:  func(t *testing.T, in *Input) { entry(in, "us").Granularity = meshv1alpha1.GranularityLocation },
		},
		{
			name: "internal IPs outside nodeCIDRs are not advertised", target: "us", source: "eu", group: "location:fra", leader: "fra-1",
			allowed: "10.10.1.0/24,fd10::100/120,10.10.2.0/24,fd10::200/120,10.14.0.2/32",
			mutate:  func(t *testing.T, in *Input) { entry(in, "eu").NodeCIDRs = []string{"172.16.0.0/12"} },
		},
		{
			name: "pod CIDRs of an undeclared family are left out", target: "us", source: "eu", group: "node:edge-1", leader: "edge-1",
			allowed: "10.10.6.0/24,10.14.0.3/32",
			mutate:  func(t *testing.T, in *Input) { entry(in, "eu").PodCIDRs = []string{"10.10.0.0/16"} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			if tc.mutate != nil {
				tc.mutate(t, &in)
			}
			p := mustCompute(t, in)
			checkPlanInvariants(t, in, p)
			peer := peerOf(t, p, tc.target, tc.source, tc.group)
			if peer == nil {
				t.Fatalf("no Peer for %s/%s on %s", tc.source, tc.group, tc.target)
			}
			if tc.allowed != "" {
				if got := strings.Join(peer.Spec.AllowedIPs, ","); got != tc.allowed {
					t.Errorf("allowedIPs\n got %s\nwant %s", got, tc.allowed)
				}
			}
			if got := endpointString(peer.Spec.Endpoint); tc.endpoint != "" && got != tc.endpoint {
				t.Errorf("endpoint %s, want %s", got, tc.endpoint)
			}
			if peer.Spec.PersistentKeepalive != tc.keepalive {
				t.Errorf("keepalive %d, want %d", peer.Spec.PersistentKeepalive, tc.keepalive)
			}
			leader := node(t, in, tc.source, tc.leader)
			if peer.Spec.PublicKey != leader.Annotations[kilov1alpha1.AnnotationKey] || peer.Annotations[AnnotationSourceLeader] != tc.leader {
				t.Errorf("Peer carries key %s of %s, want the key of leader %s", peer.Spec.PublicKey, peer.Annotations[AnnotationSourceLeader], tc.leader)
			}
			if peer.Labels[LabelSourceCluster] != tc.source || peer.Labels[LabelMeshUID] != testUID || peer.Annotations[AnnotationSourceGroup] != tc.group {
				t.Errorf("labels %v annotations %v", peer.Labels, peer.Annotations)
			}
		})
	}
}

func endpointString(e *kilov1alpha1.PeerEndpoint) string {
	switch {
	case e == nil:
		return "none"
	case e.DNSOrIP.DNS != "":
		return "dns:" + e.DNSOrIP.DNS + ":" + strconv.Itoa(int(e.Port))
	default:
		return "ip:" + e.DNSOrIP.IP + ":" + strconv.Itoa(int(e.Port))
	}
}

func TestRoamingPeerHasNoEndpoint(t *testing.T) {
	in := testInput(t)
	annotate(node(t, in, "home", "home-1"), kilov1alpha1.AnnotationClusterMeshEndpoint, "-")
	p := mustCompute(t, in)
	if peer := peerOf(t, p, "eu", "home", "location:home"); peer.Spec.Endpoint != nil {
		t.Errorf("roaming Peer has endpoint %+v", peer.Spec.Endpoint)
	}
	if g := groupPlan(t, p, "home", "location:home"); g.Endpoint != "" || !g.Ready {
		t.Errorf("group %+v", g)
	}
}

// TestTargetsShareTemplates: a group's Peer is built once and listed as it
// is on every target that gets it unchanged; that sharing is why
// DesiredPeers is read-only.
func TestTargetsShareTemplates(t *testing.T) {
	p := mustCompute(t, testInput(t))
	eu, us := peerOf(t, p, "eu", "home", "location:home"), peerOf(t, p, "us", "home", "location:home")
	if eu == nil || eu != us {
		t.Errorf("the Peer of home on eu (%p) and on us (%p) are not one shared template", eu, us)
	}
}

// TestExtraNetworks: serviceCIDR and additionalCIDRs sit in exactly one Peer
// of their cluster on every target, and move when that group stops being ready.
func TestExtraNetworks(t *testing.T) {
	in := testInput(t)
	entry(&in, "eu").AdditionalCIDRs = []string{"10.111.0.0/16"}
	p := mustCompute(t, in)
	holder := func(p *Plan, target string) []string {
		var names []string
		for _, peer := range p.DesiredPeers[target] {
			if peer.Labels[LabelSourceCluster] != "eu" {
				continue
			}
			has := slices.Contains(peer.Spec.AllowedIPs, "10.110.0.0/16")
			if has != slices.Contains(peer.Spec.AllowedIPs, "10.111.0.0/16") {
				t.Errorf("serviceCIDR and additionalCIDRs split across Peers on %s", target)
			}
			if has {
				names = append(names, peer.Annotations[AnnotationSourceGroup])
			}
		}
		return names
	}
	c, _ := p.Cluster("eu")
	for _, target := range []string{"us", "home"} {
		if got := holder(p, target); len(got) != 1 || got[0] != c.ExtraNetworksGroup {
			t.Fatalf("on %s the extra networks sit in %v, want exactly %s", target, got, c.ExtraNetworksGroup)
		}
	}

	// The holder's group stops being ready: the networks move to another group.
	was := c.ExtraNetworksGroup
	for _, n := range in.Clusters["eu"].Nodes {
		if groupOfNode(t, p, "eu", n.Name) == was {
			annotate(n, kilov1alpha1.AnnotationLastSeen, "1")
		}
	}
	p2 := mustCompute(t, in)
	c2, _ := p2.Cluster("eu")
	if c2.ExtraNetworksGroup == "" || c2.ExtraNetworksGroup == was {
		t.Fatalf("extra networks still with %q after it stopped being ready (now %q)", was, c2.ExtraNetworksGroup)
	}
	if got := holder(p2, "us"); len(got) != 1 || got[0] != c2.ExtraNetworksGroup {
		t.Errorf("extra networks in %v, want %s", got, c2.ExtraNetworksGroup)
	}
}

func groupOfNode(t testing.TB, p *Plan, cluster, nodeName string) string {
	return decision(t, p, cluster, nodeName).Group
}

func TestAllowedLocationIPs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   string
		kept    []string
		warning bool
	}{
		{name: "inside the declared nodeCIDRs", value: "192.168.50.0/24", kept: []string{"192.168.50.0/24"}},
		{name: "sorted as kg sorts them, deduplicated", value: "192.168.60.0/24,192.168.50.0/24,192.168.60.0/24", kept: []string{"192.168.50.0/24", "192.168.60.0/24"}},
		{name: "outside every declared network", value: "172.30.0.0/16", warning: true},
		{name: "overlapping an address kg routes (an internal IP)", value: "192.168.1.0/24", warning: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			annotate(node(t, in, "eu", "fra-1"), kilov1alpha1.AnnotationAllowedLocationIPs, tc.value)
			p := mustCompute(t, in)
			peer := peerOf(t, p, "us", "eu", "location:fra")
			var got []string
			for _, s := range peer.Spec.AllowedIPs {
				if strings.HasPrefix(s, "192.168.") && !strings.HasSuffix(s, "/32") || strings.HasPrefix(s, "172.") {
					got = append(got, s)
				}
			}
			if !slices.Equal(got, tc.kept) {
				t.Errorf("location IPs %v, want %v", got, tc.kept)
			}
			_, warned := findIssue(p.View.Warnings, WarningLocationIPsDropped)
			if warned != tc.warning {
				t.Errorf("warning %v, want %v (%v)", warned, tc.warning, p.View.Warnings)
			}
			if tc.warning && !hasDecisionNote(decision(t, p, "eu", "fra-1"), NoteLocationIPDropped) {
				t.Error("no note on the node that carries the dropped entry")
			}
		})
	}
	t.Run("two locations claiming one range: kg drops both", func(t *testing.T) {
		in := testInput(t)
		annotate(node(t, in, "eu", "fra-1"), kilov1alpha1.AnnotationAllowedLocationIPs, "192.168.50.0/24")
		annotate(node(t, in, "eu", "ams-1"), kilov1alpha1.AnnotationAllowedLocationIPs, "192.168.50.128/25")
		p := mustCompute(t, in)
		for _, g := range []string{"location:fra", "location:ams"} {
			for _, s := range peerOf(t, p, "us", "eu", g).Spec.AllowedIPs {
				if strings.HasPrefix(s, "192.168.50.") {
					t.Errorf("%s still carries %s", g, s)
				}
			}
		}
	})
}

func hasDecisionNote(d meshv1alpha1.NodeDecision, reason string) bool {
	for _, n := range d.Notes {
		if n.Reason == reason {
			return true
		}
	}
	return false
}

func TestNotes(t *testing.T) {
	in := testInput(t)
	annotate(node(t, in, "eu", "fra-2"), kilov1alpha1.AnnotationWireGuardIP, "10.14.0.9/16", kilov1alpha1.AnnotationClusterMeshEndpoint, "nope", kilov1alpha1.AnnotationPersistentKeepalive, "often")
	p := mustCompute(t, in)
	d := decision(t, p, "eu", "fra-2")
	for _, r := range []string{NoteStaleWireGuardIP, NoteMalformedEndpoint, NoteMalformedAnnotation} {
		if !hasDecisionNote(d, r) {
			t.Errorf("no %s note in %+v", r, d.Notes)
		}
	}
	if !d.Included {
		t.Error("notes must not skip the node")
	}
	if d := decision(t, p, "home", "home-2"); !hasDecisionNote(d, NoteInternalIPNotAdvertised) || !d.Included {
		t.Errorf("home-2: %+v", d)
	}
	if _, ok := findIssue(p.View.Warnings, WarningMalformedAnnotations); !ok {
		t.Error("no aggregated warning for malformed annotations")
	}
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(t *testing.T, in *Input)
		reason  string
		cluster string
		message string
	}{
		{name: "private endpoint", reason: WarningPrivateEndpoint, cluster: "us", message: "10.0.0.13:51820"},
		{name: "no nodeCIDRs", reason: WarningInternalIPsNotAdvert, cluster: "home", message: "(3)"},
		{
			name: "NATed cluster whose leader sends no keepalive", reason: WarningKeepaliveNotSent, cluster: "home", message: "home-1",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "home", "home-1"), kilov1alpha1.AnnotationPersistentKeepalive, "<delete>")
			},
		},
		{
			name: "roaming group whose leader sends no keepalive", reason: WarningKeepaliveNotSent, cluster: "us", message: "us-3",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-3"), kilov1alpha1.AnnotationClusterMeshEndpoint, "-")
				entry(in, "us").PersistentKeepalive = 10
			},
		},
		{
			name: "wireguard-ip lagging behind", reason: WarningWireGuardIPMismatch, cluster: "eu", message: "fra-1 has 10.14.0.7, computed 10.14.0.2",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "fra-1"), kilov1alpha1.AnnotationWireGuardIP, "10.14.0.7/16")
			},
		},
		{
			name: "granularity disagreement", reason: WarningGranularityDisagreement, cluster: "us", message: "full on 2",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-1"), kilov1alpha1.AnnotationGranularity, "location")
			},
		},
		{
			name: "unreachable cluster", reason: WarningClusterUnreachable, cluster: "us",
			mutate: func(t *testing.T, in *Input) { in.Clusters["us"] = ClusterSnapshot{Error: "dial tcp: i/o timeout"} },
		},
		{
			name: "snapshot of a cluster not in the mesh", reason: WarningUnknownCluster, cluster: "mars",
			mutate: func(t *testing.T, in *Input) { in.Clusters["mars"] = ClusterSnapshot{Reachable: true} },
		},
		{
			name: "extra networks with no group to carry them", reason: WarningExtraNetworksUnattached, cluster: "us",
			mutate: func(t *testing.T, in *Input) {
				for _, n := range in.Clusters["us"].Nodes {
					annotate(n, kilov1alpha1.AnnotationLastSeen, "1")
				}
			},
		},
		{
			name: "all groups down", reason: WarningNoReadyGroups, cluster: "us",
			mutate: func(t *testing.T, in *Input) {
				for _, n := range in.Clusters["us"].Nodes {
					annotate(n, kilov1alpha1.AnnotationLastSeen, "1")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			if tc.mutate != nil {
				tc.mutate(t, &in)
			}
			p := mustCompute(t, in)
			checkPlanInvariants(t, in, p)
			for _, w := range p.View.Warnings {
				if w.Reason == tc.reason && w.Cluster == tc.cluster && strings.Contains(w.Message, tc.message) {
					return
				}
			}
			t.Errorf("no %s warning for %s containing %q in %+v", tc.reason, tc.cluster, tc.message, p.View.Warnings)
		})
	}
}

// TestContainment: nothing claims a range of the target, nothing claims a
// range outside its source's declared networks, nothing is claimed twice.
func TestContainment(t *testing.T) {
	t.Run("source range overlapping the target's networks is left out there only", func(t *testing.T) {
		in := testInput(t)
		// Inside eu's nodeCIDRs, though no eu node uses it.
		entry(&in, "us").AdditionalCIDRs = []string{"172.24.0.0/16", "192.168.200.0/24"}
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		c, _ := p.Cluster("us")
		onEU := peerOf(t, p, "eu", "us", c.ExtraNetworksGroup)
		onHome := peerOf(t, p, "home", "us", c.ExtraNetworksGroup)
		if slices.Contains(onEU.Spec.AllowedIPs, "192.168.200.0/24") {
			t.Error("eu imports a range of its own")
		}
		if !slices.Contains(onHome.Spec.AllowedIPs, "192.168.200.0/24") {
			t.Error("home lost a range that does not collide there")
		}
		if i, ok := findIssue(p.View.Conflicts, ConflictOverlapsTargetNetwork); !ok || i.Target != "eu" || i.Cluster != "us" {
			t.Errorf("conflicts %+v", p.View.Conflicts)
		}
		if _, ok := findIssue(p.View.Conflicts, ConflictNetworkOverlap); !ok {
			t.Error("overlapping declarations not reported")
		}
	})
	t.Run("two clusters on Kilo's default subnet", func(t *testing.T) {
		in := testInput(t)
		entry(&in, "us").WireguardCIDR = "10.34.0.0/16" // home's
		for _, n := range in.Clusters["us"].Nodes {
			annotate(n, kilov1alpha1.AnnotationWireGuardIP, "<delete>")
		}
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		if _, ok := findIssue(p.View.Conflicts, ConflictDuplicateWireGuardIP); !ok {
			t.Errorf("no %s in %v", ConflictDuplicateWireGuardIP, issueReasons(p.View.Conflicts))
		}
		for _, s := range peerOf(t, p, "eu", "us", "node:us-1").Spec.AllowedIPs {
			if s == "10.34.0.1/32" {
				t.Error("duplicate WireGuard IP still advertised on eu")
			}
		}
	})
	t.Run("service CIDR overlapping another cluster's pods", func(t *testing.T) {
		in := testInput(t)
		entry(&in, "us").ServiceCIDR = "10.30.0.0/16" // home's pods
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		if _, ok := findIssue(p.View.Conflicts, ConflictCIDRClaimedTwice); !ok {
			t.Errorf("no %s in %v", ConflictCIDRClaimedTwice, issueReasons(p.View.Conflicts))
		}
		// Every pod CIDR of home collides, so nothing of home is left to advertise.
		if d := decision(t, p, "home", "home-2"); d.Reason != ReasonCIDRClaimedTwice {
			t.Errorf("home-2: %+v", d)
		}
		if g := groupPlan(t, p, "home", "location:home"); g.Ready || g.Reason != ReasonNoAdvertisedMember {
			t.Errorf("group %+v", g)
		}
		c, _ := p.Cluster("us")
		if peer := peerOf(t, p, "eu", "us", c.ExtraNetworksGroup); slices.Contains(peer.Spec.AllowedIPs, "10.30.0.0/16") {
			t.Error("a service CIDR claimed twice is still advertised")
		}
	})
}

// checkPlanInvariants holds for every plan: every Peer valid, no address in
// two Peers of a target, nothing overlapping the target's declared
// networks, nothing outside the source's, one Peer per name, labels set.
func checkPlanInvariants(t testing.TB, in Input, p *Plan) {
	t.Helper()
	nets := map[string]networks{}
	for i := range in.Spec.Clusters {
		n, _, _ := parseNetworks(&in.Spec.Clusters[i])
		nets[in.Spec.Clusters[i].Name] = n
	}
	for target, peers := range p.DesiredPeers {
		var all []netip.Prefix
		var owner []int
		names := map[string]bool{}
		for i, peer := range peers {
			if errs := peer.Validate(); len(errs) > 0 {
				t.Errorf("%s: Peer %s breaks Kilo's rules: %v", target, peer.Name, errs)
			}
			if peer.APIVersion != "kilo.squat.ai/v1alpha1" || peer.Kind != "Peer" {
				t.Errorf("%s: Peer %s has type %s/%s", target, peer.Name, peer.APIVersion, peer.Kind)
			}
			if names[peer.Name] {
				t.Errorf("%s: two Peers named %s", target, peer.Name)
			}
			names[peer.Name] = true
			if i > 0 && peers[i-1].Name >= peer.Name {
				t.Errorf("%s: Peers not sorted by name", target)
			}
			src := peer.Labels[LabelSourceCluster]
			if src == target || !IsManagedBy(peer, in.MeshNamespace, in.MeshName, in.MeshUID) || peer.Labels[LabelManagedBy] != ManagedByValue {
				t.Errorf("%s: Peer %s has labels %v", target, peer.Name, peer.Labels)
			}
			if peer.Name != PeerName(in.MeshNamespace, in.MeshName, src, peer.Annotations[AnnotationSourceGroup]) {
				t.Errorf("%s: Peer %s is not named for its group", target, peer.Name)
			}
			for _, s := range peer.Spec.AllowedIPs {
				q := canonical(netip.MustParsePrefix(s))
				if q.String() != s {
					t.Errorf("%s: %s is not canonical", target, s)
				}
				if tn, ok := nets[target]; ok {
					if o, bad := overlapsAny(q, tn.all); bad {
						t.Errorf("%s: Peer %s claims %s, which overlaps the target's %s", target, peer.Name, s, o)
					}
				}
				if sn, ok := nets[src]; ok && !validation.Within(q, sn.all) {
					t.Errorf("%s: Peer %s claims %s, outside the networks of %s", target, peer.Name, s, src)
				}
				all = append(all, q)
				owner = append(owner, i)
			}
		}
		for a := range all {
			for b := a + 1; b < len(all); b++ {
				if owner[a] != owner[b] && all[a].Overlaps(all[b]) {
					t.Errorf("%s: %s (%s) and %s (%s) overlap", target, all[a], peers[owner[a]].Name, all[b], peers[owner[b]].Name)
				}
			}
		}
	}
	for _, c := range p.View.Clusters {
		for _, d := range c.Nodes {
			if d.Reason == "" || d.Message == "" || d.Included != (d.Reason == ReasonAdvertised) {
				t.Errorf("%s: decision %+v", c.Name, d)
			}
		}
	}
}
