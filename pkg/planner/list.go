package planner

import (
	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
)

// List is a read-only list sorted by name in chunks that plans share:
// changing one element copies its chunk, not the list (a change at full
// granularity used to touch every target's lists).
type List[T any] = chunklist.List[T]

// PeerList lists the Peers desired on one target, or held on a cluster.
type PeerList = List[*kilov1alpha1.Peer]

// GroupList lists the plans of a cluster's groups.
type GroupList = List[*meshv1alpha1.GroupPlan]

func groupPlanName(g *meshv1alpha1.GroupPlan) string { return g.Name }

// groupListOf lists a cluster's groups, sorted by name, sharing their array.
func groupListOf(groups []meshv1alpha1.GroupPlan) GroupList {
	ptrs := make([]*meshv1alpha1.GroupPlan, len(groups))
	for i := range groups {
		ptrs[i] = &groups[i]
	}
	return chunklist.Of(ptrs, groupPlanName)
}

// NodeList lists the decisions on a cluster's nodes.
type NodeList = List[*meshv1alpha1.NodeDecision]

func nodeDecisionName(d *meshv1alpha1.NodeDecision) string { return d.Node }

// NodeListOf lists decisions, sorted by node name, sharing their array.
func NodeListOf(decisions ...meshv1alpha1.NodeDecision) NodeList {
	ptrs := make([]*meshv1alpha1.NodeDecision, len(decisions))
	for i := range decisions {
		ptrs[i] = &decisions[i]
	}
	return chunklist.Of(ptrs, nodeDecisionName)
}

// peerName and nodeName are the keys of Peers and Nodes in a list: both
// are cluster-scoped.
var (
	peerName = chunklist.ByName[*kilov1alpha1.Peer]
	nodeName = chunklist.ByName[*corev1.Node]
)

// PeerListOf lists peers; they must be sorted by name for a plan to find one.
func PeerListOf(peers ...*kilov1alpha1.Peer) PeerList { return chunklist.Of(peers, peerName) }

// FindPeer returns the Peer of l named name, in the time of a search: a
// pass writes one Peer of thousands on a target.
func FindPeer(l PeerList, name string) (*kilov1alpha1.Peer, bool) { return l.Get(name, peerName) }
