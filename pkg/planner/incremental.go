package planner

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
)

// Incremental planning. A State keeps the working state of the
// last plan of a mesh; Next turns the changes since then into the next plan
// by recomputing only what they reach, and equals Compute on the new input
// exactly (TestPropertyIncrementalEqualsWhole checks it after every step).
//
// What is patched in place of a whole plan: a node whose change leaves its
// cluster's groups, addresses, readiness and notes as they were (its key,
// endpoint, keepalive, leader hint, or only its check-in time), also when
// its group's leadership moves between two nodes without notes or warnings
// that depend on leading (incremental_leader.go); a Peer this mesh manages
// created, edited or deleted on a target holding no Peer of others; a Peer
// of others whose change moves nothing the planner reads of it; the
// clock moving on while no node's check-in expires. Everything else is
// planned whole, because it can move what the whole mesh shares: a group
// appearing or going renumbers the WireGuard IPs of its cluster, addresses
// are swept mesh-wide for collisions, keys are checked mesh-wide, and the
// spec, grants, other meshes' claims and a cluster's reachability reach
// every target. A mesh that relays plans whole: the relay group's Peer on
// each cluster behind NAT carries the other clusters' addresses.
// Correctness comes first: whenever a change cannot be shown to stay within
// one group's Peer and its diff entries, Next plans whole.

// NodeChange is a Node of a member cluster whose object was replaced.
type NodeChange struct {
	Cluster  string
	Old, New *corev1.Node
}

// PeerChange is a Peer on a member cluster created (Old nil), replaced, or
// deleted (New nil).
type PeerChange struct {
	Cluster  string
	Old, New *kilov1alpha1.Peer
}

// Changes is what differs between two inputs of one mesh.
type Changes struct {
	// Whole says that something besides the Nodes and Peers listed
	// differs (the spec, host access, other meshes' claims or services, a cluster's
	// reachability, a node appeared or went): the next plan is whole.
	Whole bool
	Nodes []NodeChange
	Peers []PeerChange
}

// State is what incremental planning keeps of a mesh's last plan. Next
// consumes it: only the State it returns may be used afterwards.
type State struct {
	pl   *planner
	plan *Plan
	// keys counts the analysed nodes holding each public key.
	keys map[string]int32
	// foreignKeys are the keys of every target's Peers of others.
	foreignKeys map[string]struct{}
	// peerDups[t] is true when target t's snapshot lists a Peer name twice.
	peerDups []bool
	// expiry is the earliest moment a node Kilo counts stops being counted
	// (zero: no such node), not later than the true one.
	expiry time.Time
	// notReady lists, per source, the nodes whose check-in has run out:
	// their messages say how long ago, so they move with the clock.
	notReady    [][]int
	hasLocal    bool
	hostLimited bool
	// relayed is true when the mesh relays: a relay group's Peer on a
	// cluster behind NAT carries other clusters' addresses, so one
	// group's change reaches beyond its own Peer.
	relayed bool
}

// Start plans a mesh whole and keeps what Next needs.
func Start(in Input) (*Plan, *State, error) {
	plan, pl, err := compute(in, true)
	if err != nil {
		return nil, nil, err
	}
	st := &State{pl: pl, plan: plan, foreignKeys: map[string]struct{}{}, peerDups: make([]bool, len(pl.sources)), notReady: make([][]int, len(pl.sources))}
	nodes := 0
	for _, s := range pl.sources {
		nodes += len(s.nodes)
	}
	st.keys = make(map[string]int32, nodes)
	for _, s := range pl.sources {
		st.hasLocal = st.hasLocal || s.entry.Local
		if !s.reachable {
			continue
		}
		for i := range s.nodes {
			n := &s.nodes[i]
			if n.key != "" {
				st.keys[n.key]++
			}
			if !n.kiloReady && n.reason == ReasonNotReady {
				st.notReady[s.idx] = append(st.notReady[s.idx], i)
			}
		}
		x := &pl.held[s.idx]
		for k := range x.foreignKeys {
			st.foreignKeys[k] = struct{}{}
		}
		st.peerDups[s.idx] = s.snapshot.Peers.Len() != len(x.managed)+len(x.foreign)
	}
	st.expiry = plan.CheckInExpiry
	ha := &in.HostAccess
	st.hostLimited = st.hasLocal && ha.Mode == HostBounded && (ha.MaxPeers > 0 || ha.MaxPeerBytes > 0)
	st.relayed = plan.View.Relay != nil
	return plan, st, nil
}

// refreshExpiry finds the earliest check-in expiry of the nodes Kilo counts.
func (st *State) refreshExpiry() { st.expiry = st.pl.earliestExpiry() }

// earliestExpiry is the earliest check-in expiry of the nodes Kilo counts.
func (pl *planner) earliestExpiry() time.Time {
	var first time.Time
	for _, s := range pl.sources {
		if !s.reachable {
			continue
		}
		for i := range s.nodes {
			if n := &s.nodes[i]; n.kiloReady {
				if at, err := kilov1alpha1.CheckInExpires(n.node); err == nil && (first.IsZero() || at.Before(first)) {
					first = at
				}
			}
		}
	}
	return first
}

// countedAt reports whether every node Kilo counted at the last plan is
// still counted at now. The expiry kept is the earliest of the nodes as
// first seen, so once it passes, the nodes' check-ins since are read again
// (one pass over the nodes, no plan).
func (st *State) countedAt(now time.Time) bool {
	if st.expiry.IsZero() || now.Before(st.expiry) {
		return true
	}
	st.refreshExpiry()
	return st.expiry.IsZero() || now.Before(st.expiry)
}

// Plan is the last plan; read-only, like every plan.
func (st *State) Plan() *Plan { return st.plan }

// Diff finds what differs between the input of the last plan and in: Nodes
// and Peers are compared by pointer, as member caches replace an object
// they update, and what two snapshots share of a list is skipped, so a
// change costs about what it changed, not the size of the mesh. A node
// appearing or going, or anything else, is Whole.
func (st *State) Diff(in *Input) Changes {
	prev := st.pl.in
	if prev.MeshNamespace != in.MeshNamespace || prev.MeshName != in.MeshName || prev.MeshUID != in.MeshUID ||
		prev.Installation != in.Installation || len(prev.Clusters) != len(in.Clusters) ||
		!reflect.DeepEqual(prev.Spec, in.Spec) || !reflect.DeepEqual(prev.HostAccess, in.HostAccess) ||
		!reflect.DeepEqual(prev.OtherMeshClaims, in.OtherMeshClaims) || !reflect.DeepEqual(prev.OtherServicesMeshes, in.OtherServicesMeshes) {
		return Changes{Whole: true}
	}
	var ch Changes
	for name, snap := range in.Clusters {
		old, ok := prev.Clusters[name]
		if !ok || old.Reachable != snap.Reachable || old.Error != snap.Error || old.Identity != snap.Identity || old.Connection != snap.Connection ||
			!old.CredentialExpiry.Equal(snap.CredentialExpiry) {
			return Changes{Whole: true}
		}
		if !snap.Reachable {
			continue // the planner reads nothing else of it
		}
		nodesOK := chunklist.Diff(old.Nodes, snap.Nodes, nodeName, func(o, n *corev1.Node) bool {
			ch.Nodes = append(ch.Nodes, NodeChange{Cluster: name, Old: o, New: n})
			return o != nil && n != nil
		})
		peersOK := nodesOK && chunklist.Diff(old.Peers, snap.Peers, peerName, func(o, n *kilov1alpha1.Peer) bool {
			ch.Peers = append(ch.Peers, PeerChange{Cluster: name, Old: o, New: n})
			return true
		})
		if !peersOK {
			return Changes{Whole: true}
		}
	}
	return ch
}

// Next plans in, whose differences from the last plan's input are ch
// (Diff's), patching the last plan where ch allows it and planning whole
// otherwise. It also returns whether it planned whole. st must not be used
// afterwards, also on error: use the State returned.
func (st *State) Next(in Input, ch Changes) (*Plan, *State, bool, error) {
	if st == nil || st.relayed || ch.Whole || in.Now.Before(st.pl.in.Now) || !st.countedAt(in.Now) {
		return startWhole(in)
	}
	u := st.begin(in.Now)
	if !u.clock() {
		return startWhole(in)
	}
	for i := range ch.Nodes {
		if !u.node(&ch.Nodes[i]) {
			return startWhole(in)
		}
	}
	for i := range ch.Peers {
		if !u.peer(&ch.Peers[i]) {
			return startWhole(in)
		}
	}
	*st.pl.in = in
	u.plan.CheckInExpiry = st.expiry
	st.plan = u.plan
	return u.plan, st, false, nil
}

func startWhole(in Input) (*Plan, *State, bool, error) {
	plan, st, err := Start(in)
	return plan, st, true, err
}
