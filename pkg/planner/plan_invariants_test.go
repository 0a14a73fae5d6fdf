package planner

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

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
		for _, n := range in.Clusters["us"].Nodes.All() {
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
	local := ""
	for _, c := range in.Spec.Clusters {
		if c.Local {
			local = c.Name
		}
	}
	checkCarried(t, p, local)
	nets := map[string]networks{}
	for i := range in.Spec.Clusters {
		n, _, _ := parseNetworks(&in.Spec.Clusters[i])
		nets[in.Spec.Clusters[i].Name] = n
	}
	for target, list := range p.DesiredPeers {
		peers := list.Slice()
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
			if len(peer.Spec.AllowedIPs) != len(slices.Compact(slices.Sorted(slices.Values(peer.Spec.AllowedIPs)))) {
				t.Errorf("%s: Peer %s lists an address twice: %v", target, peer.Name, peer.Spec.AllowedIPs)
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
				if sn, ok := nets[src]; ok && !validation.Within(q, sn.all) && !relayedWithin(q, peer, nets) {
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
		for _, d := range p.Nodes[c.Name].All() {
			if d.Reason == "" || d.Message == "" || d.Included != (d.Reason == ReasonAdvertised) {
				t.Errorf("%s: decision %+v", c.Name, d)
			}
		}
	}
	checkRelayInvariants(t, in, p)
}

// relayedWithin reports whether q lies inside the networks of one of the
// clusters a relay Peer carries.
func relayedWithin(q netip.Prefix, peer *kilov1alpha1.Peer, nets map[string]networks) bool {
	relays := peer.Annotations[AnnotationRelays]
	if relays == "" {
		return false
	}
	for _, c := range strings.Split(relays, ",") {
		if n, ok := nets[c]; ok && validation.Within(q, n.all) {
			return true
		}
	}
	return false
}
