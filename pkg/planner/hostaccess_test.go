package planner

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

func prefixes(ps ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ps))
	for _, p := range ps {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// addressesOn lists the allowed IPs the plan puts on target for source.
func addressesOn(p *Plan, target, source string) []string {
	var out []string
	for _, peer := range p.DesiredPeers[target].All() {
		if peer.Labels[LabelSourceCluster] == source {
			out = append(out, peer.Spec.AllowedIPs...)
		}
	}
	slices.Sort(out)
	return out
}

func hasConflict(p *Plan, reason, cluster, target string) bool {
	return slices.ContainsFunc(p.View.Conflicts, func(i meshv1alpha1.PlanIssue) bool {
		return i.Reason == reason && i.Cluster == cluster && i.Target == target
	})
}

// TestHostAccessBounds: what crosses into and out of the local cluster
// ("eu" in the fixtures) under each mode; remote-to-remote Peers are never
// affected.
func TestHostAccessBounds(t *testing.T) {
	unrestricted := mustCompute(t, testInput(t))
	tests := []struct {
		name   string
		access HostAccess
		// within[target/source] bounds every address; nil means as unrestricted.
		within map[string][]netip.Prefix
		// none lists target/source pairs that get no Peer at all.
		none      []string
		conflicts []string // reason cluster->target
	}{
		{name: "unrestricted", access: HostAccess{Mode: HostUnrestricted}},
		{name: "member networks narrower than us declares",
			access: HostAccess{Mode: HostBounded, MemberNetworks: prefixes("10.20.0.0/16", "10.24.0.0/16", "10.30.0.0/16", "10.34.0.0/16"),
				LocalNetworks: prefixes("10.0.0.0/8", "192.168.0.0/16", "fd00::/8")},
			within:    map[string][]netip.Prefix{"eu/us": prefixes("10.20.0.0/16", "10.24.0.0/16")},
			conflicts: []string{ConflictOutsideHostAccess + " us->eu"}},
		{name: "local networks narrower than eu declares",
			access: HostAccess{Mode: HostBounded, MemberNetworks: prefixes("10.0.0.0/8", "172.16.0.0/12"),
				LocalNetworks: prefixes("10.10.0.0/17", "10.14.0.0/16")},
			within:    map[string][]netip.Prefix{"us/eu": prefixes("10.10.0.0/17", "10.14.0.0/16"), "home/eu": prefixes("10.10.0.0/17", "10.14.0.0/16")},
			conflicts: []string{ConflictOutsideHostAccess + " eu->us", ConflictOutsideHostAccess + " eu->home"}},
		{name: "bounded to nothing", access: HostAccess{Mode: HostBounded},
			none: []string{"eu/us", "eu/home", "us/eu", "home/eu"}},
		{name: "denied", access: HostAccess{Mode: HostDenied},
			none:      []string{"eu/us", "eu/home", "us/eu", "home/eu"},
			conflicts: []string{ConflictHostAccessDenied + " us->eu", ConflictHostAccessDenied + " eu->home"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.HostAccess = tt.access
			p := mustCompute(t, in)
			for _, target := range []string{"eu", "us", "home"} {
				for _, source := range []string{"eu", "us", "home"} {
					if target == source {
						continue
					}
					pair := target + "/" + source
					got := addressesOn(p, target, source)
					switch bound, ok := tt.within[pair]; {
					case slices.Contains(tt.none, pair):
						if len(got) > 0 {
							t.Errorf("%s: addresses %v, want none", pair, got)
						}
					case ok:
						if len(got) == 0 {
							t.Errorf("%s: no address left", pair)
						}
						for _, a := range got {
							if !validation.Within(netip.MustParsePrefix(a), bound) {
								t.Errorf("%s: %s outside %v", pair, a, bound)
							}
						}
					default:
						if want := addressesOn(unrestricted, target, source); !slices.Equal(got, want) {
							t.Errorf("%s: %v, want as unrestricted %v", pair, got, want)
						}
					}
				}
			}
			for _, c := range tt.conflicts {
				reason, pair, _ := strings.Cut(c, " ")
				cluster, target, _ := strings.Cut(pair, "->")
				if !hasConflict(p, reason, cluster, target) {
					t.Errorf("no %s conflict for %s; conflicts: %+v", reason, pair, p.View.Conflicts)
				}
			}
			for _, c := range p.View.Conflicts {
				if tt.access.Mode == HostDenied && c.Reason == ConflictEmptyPeer {
					t.Errorf("a denied mesh's Peers are withheld, not emptied one by one: %+v", c)
				}
				if (c.Reason == ConflictOutsideHostAccess || c.Reason == ConflictHostAccessDenied) && c.Target != "eu" && c.Cluster != "eu" {
					t.Errorf("host access withheld something between two remote clusters: %+v", c)
				}
			}
		})
	}
}

// TestHostAccessRemovesPeers: narrowing or denying access is a policy
// decision, so the mesh's Peers on and of the local cluster go, also while
// the cluster they represent cannot be seen.
func TestHostAccessRemovesPeers(t *testing.T) {
	applied := withPeers(testInput(t), mustCompute(t, testInput(t)))
	usUnreachable := func(in *Input) { in.Clusters["us"] = ClusterSnapshot{Error: "timeout"} }
	euUnreachable := func(in *Input) {
		snap := in.Clusters["eu"]
		snap.Reachable, snap.Error = false, "timeout"
		in.Clusters["eu"] = snap
	}
	tests := []struct {
		name   string
		access HostAccess
		mutate func(*Input)
		target string
		// deleted is a source whose Peers on target must all be deleted;
		// trimmed one whose Peers must be updated instead.
		deleted, trimmed string
	}{
		{name: "denied: the Peers on the local cluster go", access: HostAccess{Mode: HostDenied}, target: "eu", deleted: "home"},
		{name: "denied: the local cluster's Peers elsewhere go", access: HostAccess{Mode: HostDenied}, target: "home", deleted: "eu"},
		{name: "denied, source unreachable: not kept", access: HostAccess{Mode: HostDenied}, mutate: usUnreachable, target: "eu", deleted: "us"},
		{name: "denied, local cluster unreachable: its Peers elsewhere are not kept", access: HostAccess{Mode: HostDenied}, mutate: euUnreachable, target: "us", deleted: "eu"},
		{name: "narrowed, source unreachable: kept Peers are trimmed",
			access: HostAccess{Mode: HostBounded, MemberNetworks: prefixes("10.20.0.0/16", "10.24.0.0/16", "10.30.0.0/16", "10.34.0.0/16")},
			mutate: usUnreachable, target: "eu", trimmed: "us"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := applied
			in.Clusters = maps.Clone(applied.Clusters)
			in.HostAccess = tt.access
			if tt.mutate != nil {
				tt.mutate(&in)
			}
			p := mustCompute(t, in)
			tp, _ := p.Target(tt.target)
			source := tt.deleted + tt.trimmed
			var have []string
			for _, peer := range applied.Clusters[tt.target].Peers.All() {
				if peer.Labels[LabelSourceCluster] == source {
					have = append(have, peer.Name)
				}
			}
			if len(have) == 0 {
				t.Fatalf("the fixture holds no Peer of %s on %s", source, tt.target)
			}
			for _, name := range have {
				deleted := slices.Contains(tp.Delete, name)
				updated := slices.ContainsFunc(tp.Update, func(u meshv1alpha1.PeerUpdate) bool { return u.Name == name })
				if kept := slices.ContainsFunc(tp.Kept, func(k meshv1alpha1.KeptPeer) bool { return k.Name == name }); kept {
					t.Errorf("%s is kept as it is", name)
				}
				if tt.deleted != "" && !deleted {
					t.Errorf("%s is not deleted: %+v", name, tp)
				}
				if tt.trimmed != "" && !deleted && !updated {
					t.Errorf("%s is neither trimmed nor deleted: %+v", name, tp)
				}
			}
			for _, a := range addressesOn(p, tt.target, source) {
				if tt.deleted != "" || !validation.Within(netip.MustParsePrefix(a), tt.access.MemberNetworks) {
					t.Errorf("%s still on %s", a, tt.target)
				}
			}
		})
	}
}

func TestHostAccessInput(t *testing.T) {
	in := testInput(t)
	in.HostAccess = HostAccess{}
	if _, err := Compute(in); err == nil || !strings.Contains(err.Error(), "host access") {
		t.Errorf("a mesh with a local cluster planned without host access: %v", err)
	}
	in.HostAccess.Mode = "Sometimes"
	if _, err := Compute(in); err == nil {
		t.Error("an unknown host access mode was accepted")
	}
	// Without a local cluster nothing is asked of the host.
	in = testInput(t)
	in.HostAccess = HostAccess{}
	in.Spec.Clusters[0].Local = false
	if _, err := Compute(in); err != nil {
		t.Errorf("a mesh without a local cluster: %v", err)
	}
	// The view is the plan's, as given.
	in = testInput(t)
	in.HostAccess.View = meshv1alpha1.HostAccessPlan{Granted: true, Basis: meshv1alpha1.HostAccessBasisPeerRights, Reason: HostReasonPeerRights, Message: "m"}
	if p := mustCompute(t, in); p.View.HostAccess == nil || !reflect.DeepEqual(*p.View.HostAccess, in.HostAccess.View) {
		t.Errorf("plan's hostAccess %+v", p.View.HostAccess)
	}
}
