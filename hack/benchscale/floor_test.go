package main

import (
	"net/netip"
	"testing"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/hollow"
)

// TestFloorIPsOutsideTheFleet: a floor address inside a member's network
// would be a conflict the meshes report, and the run would measure that.
func TestFloorIPsOutsideTheFleet(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		members, nodes, size int
	}{
		{"100 x 100, a location's Peer", 100, 100, 201},
		{"250 x 100, a location's Peer", 250, 100, 201},
		{"400 x 20, a location's Peer", 400, 20, 41},
		{"3 x 5000, a node's Peer", 3, 5000, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := hollow.Layout{Members: tc.members, Nodes: tc.nodes, NodesPerLocation: tc.nodes}
			var networks []netip.Prefix
			for i := range tc.members {
				networks = append(networks, netip.MustParsePrefix(l.PodCIDR(i)), netip.MustParsePrefix(l.WireGuardCIDR(i)))
			}
			networks = append(networks, netip.MustParsePrefix("172.16.0.0/12")) // the nodes' internal IPs
			seen := map[string]bool{}
			for _, src := range []int{0, tc.members / 2, tc.members - 1} {
				ips, err := floorIPs(src, tc.size)
				if err != nil {
					t.Fatal(err)
				}
				for _, ip := range ips {
					p := netip.MustParsePrefix(ip)
					if seen[ip] {
						t.Fatalf("%s given twice", ip)
					}
					seen[ip] = true
					for _, n := range networks {
						if n.Overlaps(p) {
							t.Fatalf("floor address %s of member %d is in the fleet's network %s", ip, src, n)
						}
					}
				}
			}
		})
	}
	t.Run("too many addresses", func(t *testing.T) {
		if _, err := floorIPs(300, 256); err == nil {
			t.Fatal("301 Peers of 256 addresses fit 10.255.0.0/16")
		}
	})
}
