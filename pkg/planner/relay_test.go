package planner

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// natInput is the fixtures with us and home behind NAT: eu, the local
// cluster, is the only one the others can dial.
func natInput(t testing.TB) Input {
	in := testInput(t)
	entry(&in, "us").BehindNAT = true
	entry(&in, "home").BehindNAT = true
	return in
}

// peersOf are the Peers on target that represent source.
func peersOf(p *Plan, target, source string) []string {
	var names []string
	for _, d := range p.DesiredPeers[target].All() {
		if d.Labels[LabelSourceCluster] == source {
			names = append(names, d.Name)
		}
	}
	return names
}

// relayPeer is the Peer on target that relays, nil if none does.
func relayPeer(p *Plan, target string) (name string, relays string, allowed []string) {
	for _, d := range p.DesiredPeers[target].All() {
		if r := d.Annotations[AnnotationRelays]; r != "" {
			return d.Name, r, d.Spec.AllowedIPs
		}
	}
	return "", "", nil
}

// allowedOf is every address of source's Peers on target.
func allowedOf(p *Plan, target, source string) []string {
	var out []string
	for _, d := range p.DesiredPeers[target].All() {
		if d.Labels[LabelSourceCluster] == source {
			out = append(out, d.Spec.AllowedIPs...)
		}
	}
	return out
}

func TestRelay(t *testing.T) {
	t.Run("two clusters behind NAT reach each other through the one others can dial", func(t *testing.T) {
		in := natInput(t)
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		r := p.View.Relay
		if r == nil || r.Cluster != "eu" || r.Basis != meshv1alpha1.RelayBasisChosen || r.Group == "" || !strings.Contains(r.Message, "first cluster by name") {
			t.Fatalf("relay %+v", r)
		}
		if len(r.Refused) != 0 {
			t.Errorf("refused %+v: only clusters before eu by name are asked", r.Refused)
		}
		want := []meshv1alpha1.PathPlan{{Clusters: []string{"home", "us"}, Kind: meshv1alpha1.PathRelayed, Via: "eu", Reason: PathReasonBothBehindNAT}}
		if len(p.View.Paths) != 1 || p.View.Paths[0].Kind != want[0].Kind || p.View.Paths[0].Via != "eu" || !slices.Equal(p.View.Paths[0].Clusters, want[0].Clusters) {
			t.Fatalf("paths %+v", p.View.Paths)
		}
		if n := peersOf(p, "us", "home"); len(n) > 0 {
			t.Errorf("us holds Peers of home: %v", n)
		}
		if n := peersOf(p, "home", "us"); len(n) > 0 {
			t.Errorf("home holds Peers of us: %v", n)
		}
		for _, spoke := range [][2]string{{"us", "home"}, {"home", "us"}} {
			name, relays, allowed := relayPeer(p, spoke[0])
			if name != r.PeerName || relays != spoke[1] {
				t.Errorf("%s: relay Peer %s relays %q", spoke[0], name, relays)
			}
			// Everything the relay holds of the other spoke, and nothing else of it.
			for _, a := range allowedOf(p, "eu", spoke[1]) {
				if !slices.Contains(allowed, a) {
					t.Errorf("%s: relay Peer lacks %s of %s", spoke[0], a, spoke[1])
				}
			}
		}
		// The spokes' Peers on the relay: roaming, with a keepalive.
		for _, d := range p.DesiredPeers["eu"].All() {
			if d.Spec.Endpoint != nil || d.Spec.PersistentKeepalive <= 0 {
				t.Errorf("eu: Peer %s of a cluster behind NAT: endpoint %v keepalive %d", d.Name, d.Spec.Endpoint, d.Spec.PersistentKeepalive)
			}
		}
		c, _ := p.Cluster("us")
		if !c.BehindNAT {
			t.Error("the plan does not say us is behind NAT")
		}
	})

	t.Run("a named relay", func(t *testing.T) {
		in := natInput(t)
		in.Spec.RelayCluster = "eu"
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		if r := p.View.Relay; r.Cluster != "eu" || r.Basis != meshv1alpha1.RelayBasisSpec {
			t.Errorf("relay %+v", r)
		}
	})

	t.Run("a spoke that can be dialled again goes direct", func(t *testing.T) {
		in := natInput(t)
		p1 := mustCompute(t, in)
		entry(&in, "home").BehindNAT = false
		in = withPeers(in, p1)
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		if p.View.Relay != nil || len(p.View.Paths) > 0 {
			t.Errorf("relay %+v paths %+v", p.View.Relay, p.View.Paths)
		}
		if len(peersOf(p, "us", "home")) == 0 || len(peersOf(p, "home", "us")) == 0 {
			t.Error("us and home do not hold each other's Peers")
		}
		if name, _, _ := relayPeer(p, "us"); name != "" {
			t.Errorf("us still relays through %s", name)
		}
		tp, _ := p.Target("us")
		if len(tp.Update) != 1 || tp.Update[0].Name != p1.View.Relay.PeerName {
			t.Errorf("us: the relay Peer is not updated back: %+v", tp.Update)
		}
	})

	t.Run("two clusters behind NAT and no relay: no path, named", func(t *testing.T) {
		in := natInput(t)
		in.Spec.Clusters = slices.DeleteFunc(in.Spec.Clusters, func(c meshv1alpha1.ClusterEntry) bool { return c.Name == "eu" })
		delete(in.Clusters, "eu")
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		if r := p.View.Relay; r == nil || r.Basis != meshv1alpha1.RelayBasisNone || r.Cluster != "" || len(r.Refused) != 2 {
			t.Fatalf("relay %+v", r)
		}
		if len(p.View.Paths) != 1 || p.View.Paths[0].Kind != meshv1alpha1.PathNone || p.View.Paths[0].Reason != ConflictNoRelay {
			t.Fatalf("paths %+v", p.View.Paths)
		}
		i, ok := findIssue(p.View.Conflicts, ConflictNoRelay)
		if !ok || i.Cluster != "home" || i.Target != "us" || !strings.Contains(i.Message, "home and us") {
			t.Errorf("conflicts %+v", p.View.Conflicts)
		}
		if len(peersOf(p, "us", "home"))+len(peersOf(p, "home", "us")) > 0 {
			t.Error("a pair behind NAT holds Peers of each other")
		}
	})

	t.Run("a relay named behind NAT is refused", func(t *testing.T) {
		in := natInput(t)
		in.Spec.RelayCluster = "us"
		p := mustCompute(t, in)
		if r := p.View.Relay; r.Basis != meshv1alpha1.RelayBasisNone || len(r.Refused) != 1 || r.Refused[0].Reason != RelayRefusedBehindNAT {
			t.Errorf("relay %+v", r)
		}
		if p.View.Paths[0].Kind != meshv1alpha1.PathNone {
			t.Errorf("paths %+v", p.View.Paths)
		}
	})

	t.Run("the host relays only what its grant lets in", func(t *testing.T) {
		in := natInput(t)
		// home's pods may cross into eu, its WireGuard IPs may not.
		in.HostAccess = HostAccess{Mode: HostBounded,
			MemberNetworks: prefixes("10.20.0.0/16", "10.24.0.0/16", "10.30.0.0/16"),
			LocalNetworks:  prefixes("10.10.0.0/16", "10.14.0.0/16", "10.110.0.0/16", "fd10::/56", "192.168.0.0/16")}
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		if p.View.Relay.Cluster != "eu" {
			t.Fatalf("relay %+v", p.View.Relay)
		}
		_, relays, allowed := relayPeer(p, "us")
		if relays != "home" {
			t.Fatalf("us: relays %q", relays)
		}
		home := netip.MustParsePrefix("10.30.0.0/16")
		carried := false
		for _, a := range allowed {
			q := netip.MustParsePrefix(a)
			if netip.MustParsePrefix("10.34.0.0/16").Overlaps(q) {
				t.Errorf("us: the relay carries %s of home, which the grant keeps out of eu", a)
			}
			carried = carried || home.Contains(q.Addr())
		}
		if !carried {
			t.Errorf("us: the relay carries no pod network of home: %v", allowed)
		}
	})

	t.Run("the host without rights or grant relays nothing", func(t *testing.T) {
		in := natInput(t)
		in.HostAccess = HostAccess{Mode: HostDenied}
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		r := p.View.Relay
		if r.Basis != meshv1alpha1.RelayBasisNone || !slices.ContainsFunc(r.Refused, func(x meshv1alpha1.RelayRefusal) bool {
			return x.Cluster == "eu" && x.Reason == RelayRefusedCannotCarry
		}) {
			t.Errorf("relay %+v", r)
		}
		if name, _, _ := relayPeer(p, "us"); name != "" {
			t.Errorf("us relays through %s", name)
		}
	})

	t.Run("the relay group is the same in any order and follows readiness", func(t *testing.T) {
		in := natInput(t)
		p := mustCompute(t, in)
		g := p.View.Relay.Group
		for _, d := range p.Groups["eu"].All() {
			if d.Name == g && d.Endpoint == "" {
				t.Errorf("the relay group %s has no endpoint", g)
			}
		}
		// Its leader stops checking in: another group takes over.
		for _, d := range p.Groups["eu"].All() {
			if d.Name == g {
				for _, n := range d.Members {
					annotate(node(t, in, "eu", n), "kilo.squat.ai/last-seen", "1")
				}
			}
		}
		p2 := mustCompute(t, in)
		checkPlanInvariants(t, in, p2)
		if p2.View.Relay.Group == g || p2.View.Relay.Cluster != "eu" {
			t.Errorf("relay %+v after group %s stopped", p2.View.Relay, g)
		}
	})
}

func TestRelayPlansWholeIncrementally(t *testing.T) {
	in := natInput(t)
	_, st, err := Start(in)
	if err != nil {
		t.Fatal(err)
	}
	next := in
	next.Now = in.Now.Add(1)
	if _, _, whole, err := st.Next(next, st.Diff(&next)); err != nil || !whole {
		t.Errorf("a relaying mesh was patched (whole %t, %v)", whole, err)
	}
}
