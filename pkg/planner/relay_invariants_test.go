package planner

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// checkRelayInvariants holds for every plan: between two clusters exactly
// one path; direct unless both are behind NAT; a relayed pair at most one
// hop away, through a relay cluster that can be dialled and holds both
// spokes' Peers itself; paths listed for exactly the pairs behind NAT.
func checkRelayInvariants(t testing.TB, in Input, p *Plan) {
	t.Helper()
	nat := map[string]bool{}
	nets := map[string]networks{}
	for i := range in.Spec.Clusters {
		c := &in.Spec.Clusters[i]
		nat[c.Name] = c.BehindNAT
		n, _, _ := parseNetworks(c)
		nets[c.Name] = n
	}
	relay := p.View.Relay
	natPairs := 0
	for a := range nat {
		for b := range nat {
			if a < b && nat[a] && nat[b] {
				natPairs++
			}
		}
	}
	if (natPairs > 0 || in.Spec.RelayCluster != "") != (relay != nil) {
		t.Fatalf("%d pairs behind NAT, relayCluster %q, relay %+v", natPairs, in.Spec.RelayCluster, relay)
	}
	if len(p.View.Paths) != natPairs {
		t.Errorf("%d paths for %d pairs behind NAT: %+v", len(p.View.Paths), natPairs, p.View.Paths)
	}
	relayed := map[[2]string]bool{}
	for _, path := range p.View.Paths {
		if len(path.Clusters) != 2 || path.Clusters[0] >= path.Clusters[1] || !nat[path.Clusters[0]] || !nat[path.Clusters[1]] {
			t.Errorf("path %+v is not a sorted pair of clusters behind NAT", path)
			continue
		}
		switch path.Kind {
		case meshv1alpha1.PathRelayed:
			if path.Via == "" || path.Via != relay.Cluster || nat[path.Via] || path.Reason != PathReasonBothBehindNAT {
				t.Errorf("relayed path %+v with relay %+v", path, relay)
			}
			relayed[[2]string{path.Clusters[0], path.Clusters[1]}] = true
			relayed[[2]string{path.Clusters[1], path.Clusters[0]}] = true
		case meshv1alpha1.PathNone:
			if path.Via != "" || path.Reason != ConflictNoRelay || path.Message == "" {
				t.Errorf("path with none %+v", path)
			}
		default:
			t.Errorf("path %+v: a pair behind NAT is never direct", path)
		}
	}
	kept := map[string]map[string]bool{}
	for _, tp := range p.View.Targets {
		kept[tp.Cluster] = map[string]bool{}
		for _, k := range tp.Kept {
			kept[tp.Cluster][k.Name] = true
		}
	}
	for target, list := range p.DesiredPeers {
		carries := map[string]bool{}
		for _, peer := range list.All() {
			src := peer.Labels[LabelSourceCluster]
			if nat[target] && nat[src] && !kept[target][peer.Name] {
				t.Errorf("%s holds Peer %s of %s although both are behind NAT", target, peer.Name, src)
			}
			relays := peer.Annotations[AnnotationRelays]
			if relays == "" || kept[target][peer.Name] {
				continue // a kept Peer is as it was, relaying or not
			}
			if relay != nil && peer.Name != relay.PeerName && heldRelaying(in, target, peer.Name) {
				continue // a kept Peer of another group, trimmed: it relays no more than it did
			}
			if !nat[target] || relay == nil || src != relay.Cluster || peer.Name != relay.PeerName || nat[src] {
				t.Errorf("%s: Peer %s of %s relays %s; relay %+v", target, peer.Name, src, relays, relay)
				continue
			}
			for _, c := range strings.Split(relays, ",") {
				carries[c] = true
				if !nat[c] || c == target || !relayed[[2]string{target, c}] {
					t.Errorf("%s: Peer %s relays %s, which is no relayed pair with it", target, peer.Name, c)
				}
			}
			// One hop: every relayed address is one the relay holds of its
			// own cluster's Peer, so the relay forwards it straight on.
			hub := map[string]bool{}
			for _, hp := range p.DesiredPeers[src].All() {
				if nat[hp.Labels[LabelSourceCluster]] {
					for _, a := range hp.Spec.AllowedIPs {
						hub[a] = true
					}
				}
			}
			for _, a := range peer.Spec.AllowedIPs {
				q := canonical(netip.MustParsePrefix(a))
				if validation.Within(q, nets[src].all) {
					continue
				}
				if !hub[a] {
					t.Errorf("%s: Peer %s relays %s, which %s holds of no spoke", target, peer.Name, a, src)
				}
			}
		}
		for pair := range relayed {
			if pair[0] == target && !carries[pair[1]] {
				t.Errorf("%s and %s are relayed, but no Peer on %s carries %s", pair[0], pair[1], target, pair[1])
			}
		}
	}
	if relay != nil && relay.Cluster != "" {
		if nat[relay.Cluster] || slices.ContainsFunc(relay.Refused, func(r meshv1alpha1.RelayRefusal) bool { return r.Cluster == relay.Cluster }) {
			t.Errorf("relay %+v", relay)
		}
	}
}

// heldRelaying reports whether target held a Peer of that name that relayed.
func heldRelaying(in Input, target, name string) bool {
	for _, p := range in.Clusters[target].Peers.All() { // a malformed snapshot may hold the name twice
		if p.Name == name && p.Annotations[AnnotationRelays] != "" {
			return true
		}
	}
	return false
}
