package planner

import (
	"fmt"
	"hash/fnv"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// claimKind says where an address of a Peer comes from, for the order kg
// uses and for messages.
type claimKind uint8

const (
	claimPod         claimKind = iota // a node's spec.podCIDR
	claimPodExtra                     // another entry of a node's spec.podCIDRs
	claimInternalIP                   // a node's internal IP, as a host route
	claimWireGuardIP                  // the group's WireGuard IP, as a host route
	claimLocationIP                   // an allowed-location-ips entry of the group
	claimExtra                        // the cluster's serviceCIDR or additionalCIDRs
)

// claim is one address a group would put into its Peer.
type claim struct {
	prefix netip.Prefix
	// node indexes the source's nodes, -1 for addresses of the group or cluster.
	node    int32
	kind    claimKind
	dropped bool
}

// export is one group of a source cluster as a Peer for the other clusters.
type export struct {
	src   int
	group int
	name  string
	key   string

	endpoint  Endpoint
	keepalive int
	// hostPort is endpoint.String(), set once the export is final.
	hostPort string

	// claims are the candidate addresses, in kg's order.
	claims []claim
	// final are the addresses that survived every mesh-wide check; the
	// template's AllowedIPs are their string forms.
	final []claim

	ready           bool
	reason, message string
	// peer is the template: the Peer every target gets unless a
	// target-specific check removes something. It is shared by those
	// targets' lists, so it is never modified once built.
	peer *kilov1alpha1.Peer

	// keyClusters are the clusters with a node holding this key, when
	// there are several (the source is one of them).
	keyClusters []int
	// keyShared are the ready exports with this key, when there are
	// several (this one is one of them).
	keyShared []*export
}

// fail marks the export not ready; the first reason found is kept.
func (e *export) fail(reason, message string) {
	if !e.ready {
		return
	}
	e.ready, e.reason, e.message = false, reason, message
}

var peerTypeMeta = metav1.TypeMeta{APIVersion: kilov1alpha1.SchemeGroupVersion.String(), Kind: kilov1alpha1.PeerKind}

// rendezvous is the highest-random-weight score of a group for its cluster.
func rendezvous(cluster, group string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(cluster))
	h.Write([]byte{0})
	h.Write([]byte(group))
	return h.Sum64()
}

// describe names the origin of a claim for messages.
func (pl *planner) describe(s *source, e *export, c claim) string {
	where := ""
	switch c.kind {
	case claimPod, claimPodExtra:
		where = "pod CIDR of node " + s.nodes[c.node].name
	case claimInternalIP:
		where = "internal IP of node " + s.nodes[c.node].name
	case claimWireGuardIP:
		where = "WireGuard IP of group " + s.groups[e.group].name
	case claimLocationIP:
		where = "allowed-location-ips of group " + s.groups[e.group].name
	case claimExtra:
		return fmt.Sprintf("%s (serviceCIDR/additionalCIDRs of cluster %s)", c.prefix, s.name)
	}
	return fmt.Sprintf("%s (%s, cluster %s)", c.prefix, where, s.name)
}
