package planner

import (
	"errors"
	"net/netip"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// HostAccessMode is what the planner lets cross into and out of the local
// cluster (the one the server runs in).
type HostAccessMode string

const (
	// HostUnrestricted: nothing is withheld for host access (a user with
	// Peer rights wrote the mesh, or a pre-grant mesh is in its grace period).
	HostUnrestricted HostAccessMode = "Unrestricted"
	// HostBounded: Peers on the local cluster carry only addresses inside
	// MemberNetworks, and the local cluster's Peers elsewhere only
	// addresses inside LocalNetworks.
	HostBounded HostAccessMode = "Bounded"
	// HostDenied: no Peer goes onto the local cluster and none represents
	// it elsewhere; the mesh's Peers there are removed.
	HostDenied HostAccessMode = "Denied"
)

// HostAccess is the mesh's access to the local cluster, decided outside the
// planner from admission's record, the grants and the upgrade grace period.
// It is required when the spec has a local cluster.
type HostAccess struct {
	Mode HostAccessMode
	// MemberNetworks and LocalNetworks bound a HostBounded mesh.
	MemberNetworks []netip.Prefix
	LocalNetworks  []netip.Prefix
	// MaxPeers and MaxPeerBytes bound the Peers of a HostBounded mesh on
	// the local cluster (PeerBytes); zero: no bound. The Peers past them,
	// in name order, are left out (ConflictTooManyHostPeers).
	MaxPeers     int
	MaxPeerBytes int64
	// EndpointNetworks are the networks the server allows member API
	// servers in for the mesh's namespace (--member-server-cidrs and the
	// grants' memberServers). In every mode, an endpoint of a Peer on the
	// local cluster in a guarded range (loopback, link-local, unspecified,
	// cloud metadata) that none of them opens keeps the Peer off it
	// (ConflictEndpointNotAllowed).
	EndpointNetworks []netip.Prefix
	// View is shown in the plan as it is: it says why.
	View meshv1alpha1.HostAccessPlan
}

func validateHostAccess(in *Input) error {
	hasLocal := false
	for _, c := range in.Spec.Clusters {
		hasLocal = hasLocal || c.Local
	}
	switch in.HostAccess.Mode {
	case HostUnrestricted, HostBounded, HostDenied:
		return nil
	case "":
		if hasLocal {
			return errors.New("the host access of a mesh with a local cluster is required")
		}
		return nil
	}
	return errors.New("unknown host access mode " + string(in.HostAccess.Mode))
}

// restrictedByHostAccess reports whether host access withholds anything from this
// plan: then every target is planned export by export.
func (pl *planner) restrictedByHostAccess() bool {
	if pl.in.HostAccess.Mode == HostUnrestricted || pl.in.HostAccess.Mode == "" {
		return false
	}
	for _, s := range pl.sources {
		if s.entry.Local {
			return true
		}
	}
	return false
}

// hostBound is what may cross from source src to target t: on the local
// cluster only member networks, from it only local networks. bounded is
// false when host access does not apply to the pair.
func (pl *planner) hostBound(src, t *source) (allowed []netip.Prefix, bounded bool) {
	ha := &pl.in.HostAccess
	if ha.Mode != HostBounded && ha.Mode != HostDenied {
		return nil, false
	}
	switch {
	case ha.Mode == HostDenied && (t.entry.Local || src.entry.Local):
		return nil, true
	case t.entry.Local:
		return ha.MemberNetworks, true
	case src.entry.Local:
		return ha.LocalNetworks, true
	}
	return nil, false
}

// hostDenied reports whether nothing may cross between src and t.
func (pl *planner) hostDenied(src, t *source) bool {
	return pl.in.HostAccess.Mode == HostDenied && (t.entry.Local || src.entry.Local)
}

// hostConflict is the reason and lead of an address withheld for host access.
func (pl *planner) hostConflict() (reason, lead string) {
	if pl.in.HostAccess.Mode == HostDenied {
		return ConflictHostAccessDenied, "Peers and addresses withheld: the mesh has no access to the local cluster (see hostAccess)"
	}
	return ConflictOutsideHostAccess, "addresses outside the networks the mesh's host access allows (see hostAccess); left out"
}

// endpointLead summarises the Peers kept off the local cluster for their endpoint.
const endpointLead = "Peers whose endpoint is an address the server's policy refuses on the local cluster (loopback, link-local, unspecified, cloud metadata); not planned there"

// hostAccessView is the plan's copy of the host access, nil when none was given.
func hostAccessView(ha *HostAccess) *meshv1alpha1.HostAccessPlan {
	if ha.View.Basis == "" {
		return nil
	}
	return ha.View.DeepCopy()
}
