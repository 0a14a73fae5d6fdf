package planner

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

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
		for _, peer := range p.DesiredPeers[target].All() {
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
	for _, n := range in.Clusters["eu"].Nodes.All() {
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
