package planner

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// allowedIPsOn lists every address the Peers of source carry on target.
func allowedIPsOn(p *Plan, target, source string) []string {
	var out []string
	for _, peer := range p.DesiredPeers[target].All() {
		if peer.Labels[LabelSourceCluster] == source {
			out = append(out, peer.Spec.AllowedIPs...)
		}
	}
	return out
}

// TestOtherMeshClaims: on a cluster shared with a mesh that takes
// precedence, the addresses it claims are left out of this mesh's Peers
// there, and only there, with a network conflict naming nothing of the
// other mesh; a network both meshes declare for one cluster is that
// cluster's own.
func TestOtherMeshClaims(t *testing.T) {
	base := mustCompute(t, testInput(t))
	in := testInput(t)
	// Another mesh routes 10.20.0.0/17 (half of us's pod network) and
	// 10.34.0.0/16 on eu; it lists home too, as the same cluster.
	in.OtherMeshClaims = map[string][]OtherMeshClaim{"eu": {
		{Prefix: netip.MustParsePrefix("10.20.0.0/17")},
		{Prefix: netip.MustParsePrefix("10.34.0.0/16"), SameCluster: "home"},
	}}
	p := mustCompute(t, in)

	inClaim := func(s string) bool { return netip.MustParsePrefix("10.20.0.0/17").Overlaps(netip.MustParsePrefix(s)) }
	onEU := allowedIPsOn(p, "eu", "us")
	if len(onEU) == 0 {
		t.Fatal("no address of us left on eu")
	}
	if slices.ContainsFunc(onEU, inClaim) {
		t.Errorf("claimed addresses still in us's Peers on eu: %v", onEU)
	}
	if !slices.ContainsFunc(allowedIPsOn(base, "eu", "us"), inClaim) {
		t.Fatal("the fixture has no us address inside the claim: the test proves nothing")
	}
	if got, want := allowedIPsOn(p, "home", "us"), allowedIPsOn(base, "home", "us"); !slices.Equal(got, want) {
		t.Errorf("us's Peers on home changed: %v, want %v", got, want)
	}
	if got, want := allowedIPsOn(p, "eu", "home"), allowedIPsOn(base, "eu", "home"); !slices.Equal(got, want) {
		t.Errorf("home's own network, claimed for home by the other mesh, was left out: %v, want %v", got, want)
	}
	c, ok := findIssue(p.View.Conflicts, ConflictCIDRClaimedByOtherMesh)
	switch {
	case !ok:
		t.Fatalf("no %s conflict: %v", ConflictCIDRClaimedByOtherMesh, issueReasons(p.View.Conflicts))
	case c.Cluster != "us" || c.Target != "eu" || !IsNetworkConflict(c.Reason):
		t.Errorf("conflict %+v", c)
	case strings.Contains(c.Message, "10.20.0.0/17"):
		t.Errorf("the conflict quotes the other mesh's network: %s", c.Message)
	}
}

// TestOtherMeshClaimsOnKeptPeers: a Peer kept for an unreachable source is
// trimmed of the claimed addresses as well.
func TestOtherMeshClaimsOnKeptPeers(t *testing.T) {
	in := testInput(t)
	in = withPeers(in, mustCompute(t, in))
	in.Clusters["us"] = ClusterSnapshot{Error: "down"}
	in.OtherMeshClaims = map[string][]OtherMeshClaim{"eu": {{Prefix: netip.MustParsePrefix("10.20.0.0/16")}}}
	p := mustCompute(t, in)
	for _, ip := range allowedIPsOn(p, "eu", "us") {
		if netip.MustParsePrefix("10.20.0.0/16").Overlaps(netip.MustParsePrefix(ip)) {
			t.Errorf("kept Peer still carries %s", ip)
		}
	}
	if _, ok := findIssue(p.View.Conflicts, ConflictCIDRClaimedByOtherMesh); !ok {
		t.Errorf("no %s conflict: %v", ConflictCIDRClaimedByOtherMesh, issueReasons(p.View.Conflicts))
	}
}
