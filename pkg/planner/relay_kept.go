package planner

import (
	"net/netip"
	"slices"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// keptRelayed are the declared networks of the clusters a kept Peer on t
// relays that it may still carry: those of clusters behind NAT, when t is
// behind NAT too and the Peer's source src cannot be observed, so that a
// relay Peer is kept like any other. A Peer kept for a conflict of its
// own group relays nothing: the relay group's Peer does.
func (pl *planner) keptRelayed(t *source, src *source, p *kilov1alpha1.Peer) []netip.Prefix {
	relays := p.Annotations[AnnotationRelays]
	if relays == "" || !t.entry.BehindNAT || src.keepReason == "" {
		return nil
	}
	var nets []netip.Prefix
	for _, name := range strings.Split(relays, ",") {
		if i, ok := pl.byName[name]; ok && i != t.idx && pl.sources[i].entry.BehindNAT {
			nets = append(nets, pl.sources[i].nets.all...)
		}
	}
	return nets
}

// relistRelays makes a trimmed kept Peer on t name only the clusters it
// may still relay (keptRelayed) and carries addresses of; p's annotations
// are its own (keptCopy).
func (pl *planner) relistRelays(t, src *source, p *kilov1alpha1.Peer) {
	relays := p.Annotations[AnnotationRelays]
	if relays == "" {
		return
	}
	var still []string
	for _, name := range strings.Split(relays, ",") {
		i, ok := pl.byName[name]
		if !ok || !t.entry.BehindNAT || src.keepReason == "" || i == t.idx || !pl.sources[i].entry.BehindNAT {
			continue
		}
		if slices.ContainsFunc(p.Spec.AllowedIPs, func(a string) bool {
			q, err := netip.ParsePrefix(a)
			return err == nil && validation.Within(canonical(q), pl.sources[i].nets.all)
		}) {
			still = append(still, name)
		}
	}
	if len(still) == 0 {
		delete(p.Annotations, AnnotationRelays)
		return
	}
	p.Annotations[AnnotationRelays] = strings.Join(still, ",")
}
