package planner

import (
	"slices"
	"testing"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// wideGrant bounds nothing of the fixtures' networks: only its limits do.
func wideGrant(maxPeers int, maxBytes int64) HostAccess {
	return HostAccess{Mode: HostBounded, MaxPeers: maxPeers, MaxPeerBytes: maxBytes,
		MemberNetworks: prefixes("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fd00::/8"),
		LocalNetworks:  prefixes("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fd00::/8")}
}

// TestLimitHostPeers: a granted mesh puts no more Peers, and no heavier
// ones, on the local cluster ("eu") than its grants allow: the first in
// name order stay, the plan says why the others are left out, and the
// members' Peers are not bounded.
func TestLimitHostPeers(t *testing.T) {
	all := mustCompute(t, testInput(t)).DesiredPeers
	onHost := all["eu"].Slice()
	if len(onHost) < 3 {
		t.Fatalf("the fixtures put %d Peers on eu; the test needs 3 or more", len(onHost))
	}
	first := PeerBytes(onHost[0])
	for _, tc := range []struct {
		name   string
		access HostAccess
		want   int // Peers left on eu
	}{
		{"within both bounds", wideGrant(len(onHost), 1<<20), len(onHost)},
		{"one Peer over the count", wideGrant(len(onHost)-1, 1<<20), len(onHost) - 1},
		{"room for one Peer's bytes", wideGrant(100, first), 1},
		{"Peer rights are not bounded", HostAccess{Mode: HostUnrestricted, MaxPeers: 1, MaxPeerBytes: 1}, len(onHost)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			in.HostAccess = tc.access
			p := mustCompute(t, in)
			got := p.DesiredPeers["eu"].Slice()
			if len(got) != tc.want {
				t.Fatalf("%d Peers on eu, want %d", len(got), tc.want)
			}
			for i, peer := range got {
				if peer.Name != onHost[i].Name {
					t.Errorf("Peer %d is %s, want %s: the first in name order stay", i, peer.Name, onHost[i].Name)
				}
			}
			if limited := tc.want < len(onHost); hasConflict(p, ConflictTooManyHostPeers, "", "eu") != limited {
				t.Errorf("%s reported: %v, want %v (%v)", ConflictTooManyHostPeers, !limited, limited, p.View.Conflicts)
			}
			for _, member := range []string{"us", "home"} {
				if p.DesiredPeers[member].Len() != all[member].Len() {
					t.Errorf("%s holds %d Peers, want %d: members are not bounded", member, p.DesiredPeers[member].Len(), all[member].Len())
				}
			}
		})
	}
}

// TestHostEndpointPolicy: a member Node's endpoint in a guarded range never
// becomes the endpoint of a Peer on the local cluster ("eu"), in any mode,
// unless the networks allowed for member servers open it; Peers on other
// members are not judged.
func TestHostEndpointPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint string
		access         HostAccess
		refused        bool
	}{
		{"a public address", "198.51.100.7:51820", HostAccess{Mode: HostUnrestricted}, false},
		{"a private address", "10.0.0.7:51820", wideGrant(0, 0), false},
		{"the cloud metadata address", "169.254.169.254:51820", wideGrant(0, 0), true},
		{"the metadata address with Peer rights", "169.254.169.254:51820", HostAccess{Mode: HostUnrestricted}, true},
		{"the metadata address, a wide network listed", "169.254.169.254:51820", HostAccess{Mode: HostUnrestricted, EndpointNetworks: prefixes("169.254.0.0/16")}, true},
		{"link-local", "169.254.3.4:51820", wideGrant(0, 0), true},
		{"IPv6 link-local", "[fe80::1]:51820", wideGrant(0, 0), true},
		{"loopback", "127.0.0.1:51820", wideGrant(0, 0), true},
		{"IPv4-mapped loopback", "[::ffff:127.0.0.1]:51820", wideGrant(0, 0), true},
		{"loopback, allowed as for member servers", "127.0.0.1:51820", HostAccess{Mode: HostBounded, MemberNetworks: wideGrant(0, 0).MemberNetworks,
			LocalNetworks: wideGrant(0, 0).LocalNetworks, EndpointNetworks: prefixes("127.0.0.0/8")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			in.HostAccess = tc.access
			annotate(node(t, in, "us", "us-1"), kilov1alpha1.AnnotationForceEndpoint, tc.endpoint)
			p := mustCompute(t, in)
			if got := peerOf(t, p, "eu", "us", "node:us-1") == nil; got != tc.refused {
				t.Errorf("Peer of us-1 kept off eu: %v, want %v", got, tc.refused)
			}
			if hasConflict(p, ConflictEndpointNotAllowed, "us", "eu") != tc.refused {
				t.Errorf("%s reported: %v, want %v", ConflictEndpointNotAllowed, !tc.refused, tc.refused)
			}
			if peerOf(t, p, "home", "us", "node:us-1") == nil {
				t.Error("the Peer of us-1 left home too: only the local cluster applies the policy")
			}
			if !slices.ContainsFunc(p.DesiredPeers["eu"].Slice(), func(peer *kilov1alpha1.Peer) bool { return peer.Labels[LabelSourceCluster] == "home" }) {
				t.Error("home's Peers left eu")
			}
		})
	}
}
