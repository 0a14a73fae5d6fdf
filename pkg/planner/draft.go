package planner

import (
	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// draft is a target's plan before relaying: the Peers it must hold, which
// of them are kept as they are, and what it holds now.
type draft struct {
	tp      meshv1alpha1.TargetPlan
	desired []*kilov1alpha1.Peer
	kept    map[string]bool
	// trimmed are the kept Peers containment changed: planned like any
	// other, but not Peers of the source's ready groups.
	trimmed map[string]bool
	managed []*kilov1alpha1.Peer
	// relayable is, by source index, what a target behind NAT could hold
	// of each other cluster behind NAT: the Peers it would get, after
	// every check of the target, whose addresses only a relay carries
	// (relay.go). They are not planned.
	relayable map[int][]*kilov1alpha1.Peer
}

// finish counts a target's desired Peers and, when it is reachable,
// compares them with the Peers it holds.
func (d *draft) finish(t *source) (meshv1alpha1.TargetPlan, []*kilov1alpha1.Peer) {
	d.tp.DesiredPeers = int32(len(d.desired))
	if t.reachable {
		diff(&d.tp, d.desired, d.kept, d.managed)
	}
	return d.tp, d.desired
}
