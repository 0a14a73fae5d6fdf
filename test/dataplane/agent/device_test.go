package main

import (
	"net/netip"
	"strings"
	"testing"
)

func TestPeerChanges(t *testing.T) {
	peer := func(key int, allowed ...string) wgPeer {
		p := wgPeer{PublicKey: testKey(key), Endpoint: netip.MustParseAddrPort("203.0.113.1:51820")}
		for _, a := range allowed {
			p.AllowedIPs = append(p.AllowedIPs, netip.MustParsePrefix(a))
		}
		return p
	}
	hex := func(key int) string {
		h, _ := hexKey(testKey(key))
		return h
	}
	a, b := peer(1, "10.0.1.0/24"), peer(2, "10.0.2.0/24")
	for _, tc := range []struct {
		name    string
		applied []wgPeer
		resync  bool
		want    []wgPeer
		has     []string
		hasNot  []string
	}{
		{name: "unchanged peers are left alone", applied: []wgPeer{a}, want: []wgPeer{a, b},
			has: []string{"public_key=" + hex(2), "allowed_ip=10.0.2.0/24"}, hasNot: []string{hex(1), "replace_peers"}},
		{name: "a peer no longer wanted is removed", applied: []wgPeer{a, b}, want: []wgPeer{b},
			has: []string{"public_key=" + hex(1) + "\nremove=true"}, hasNot: []string{hex(2)}},
		{name: "a changed peer is written in full", applied: []wgPeer{a}, want: []wgPeer{peer(1, "10.0.1.0/24", "10.0.9.0/24")},
			has: []string{"public_key=" + hex(1) + "\nendpoint=203.0.113.1:51820", "replace_allowed_ips=true\nallowed_ip=10.0.1.0/24\nallowed_ip=10.0.9.0/24"}},
		{name: "after a failure every peer is replaced", resync: true, want: []wgPeer{a},
			has: []string{"replace_peers=true\npublic_key=" + hex(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &dataplane{peers: map[string]wgPeer{}, resync: tc.resync}
			for _, p := range tc.applied {
				d.peers[p.PublicKey] = p
			}
			want := map[string]wgPeer{}
			for _, p := range tc.want {
				want[p.PublicKey] = p
			}
			got, err := d.peerChanges(want)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.has {
				if !strings.Contains(got, s) {
					t.Errorf("missing %q in\n%s", s, got)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(got, s) {
					t.Errorf("unexpected %q in\n%s", s, got)
				}
			}
		})
	}
}
