package planner

import (
	"fmt"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// peerOverheadBytes is what a Peer weighs beyond its strings, in the API's
// JSON and etcd's record: field names, metadata the API server adds.
const peerOverheadBytes = 512

// PeerBytes is what a Peer counts against HostAccess.MaxPeerBytes: its
// name, labels, annotations and spec strings, plus peerOverheadBytes.
func PeerBytes(p *kilov1alpha1.Peer) int64 {
	n := int64(peerOverheadBytes + len(p.Name) + len(p.Spec.PublicKey) + len(p.Spec.PresharedKey))
	for k, v := range p.Labels {
		n += int64(len(k) + len(v))
	}
	for k, v := range p.Annotations {
		n += int64(len(k) + len(v))
	}
	for _, s := range p.Spec.AllowedIPs {
		n += int64(len(s))
	}
	if e := p.Spec.Endpoint; e != nil {
		n += int64(len(e.DNSOrIP.DNS) + len(e.DNSOrIP.IP))
	}
	return n
}

// limitHostPeers keeps the Peers of a HostBounded mesh on the local cluster
// within the grants' bounds: desired is in name order, and the Peers past
// either bound are left out (kept Peers stay, and count). A member with
// thousands of tiny pod networks would otherwise fill the host's etcd and
// every kg's watch.
func (pl *planner) limitHostPeers(t *source, desired []*kilov1alpha1.Peer, keptNames map[string]bool) []*kilov1alpha1.Peer {
	ha := &pl.in.HostAccess
	if !t.entry.Local || ha.Mode != HostBounded || (ha.MaxPeers <= 0 && ha.MaxPeerBytes <= 0) {
		return desired
	}
	var count int
	var bytes int64
	out := desired[:0:0]
	for _, p := range desired {
		size := PeerBytes(p)
		over := (ha.MaxPeers > 0 && count+1 > ha.MaxPeers) || (ha.MaxPeerBytes > 0 && bytes+size > ha.MaxPeerBytes)
		if over && !keptNames[p.Name] {
			pl.issues.conflict(ConflictTooManyHostPeers, "", t.name,
				fmt.Sprintf("Peers beyond what the mesh's ClusterMeshGrants allow on the local cluster (maxHostPeers %d, maxHostPeerKiB %d); left out in name order", ha.MaxPeers, ha.MaxPeerBytes>>10),
				p.Name)
			continue
		}
		count, bytes = count+1, bytes+size
		out = append(out, p)
	}
	return out
}

// checkHostEndpoints applies the server's address policy to the endpoints
// that Peers on the local cluster would carry: every node of the host
// sends its WireGuard packets there, so a member Node naming a loopback,
// link-local, unspecified or cloud metadata address (in force-endpoint,
// say) must not become one. The networks that open those ranges are the
// member servers' (validation.GuardedAddress), one definition for both.
// A DNS endpoint is resolved by kg on each node and cannot be judged here.
func (pl *planner) checkHostEndpoints() {
	local := false
	for _, s := range pl.sources {
		local = local || s.entry.Local
	}
	if !local {
		return
	}
	for _, e := range pl.order {
		why := pl.endpointRefusal(e, e.endpoint)
		if why == "" {
			continue
		}
		if pl.refusedEndpoints == nil {
			pl.refusedEndpoints = map[*export]string{}
		}
		pl.refusedEndpoints[e] = why
	}
}

// endpointRefusal says why export e, with endpoint ep, may not be a Peer on
// the local cluster; "" when it may.
func (pl *planner) endpointRefusal(e *export, ep Endpoint) string {
	if pl.sources[e.src].entry.Local || !ep.Addr.IsValid() {
		return ""
	}
	what, guarded, refused := validation.GuardedAddress(ep.Addr, pl.in.HostAccess.EndpointNetworks)
	if !refused {
		return ""
	}
	return fmt.Sprintf("group %s: endpoint %s is %s (outside the networks allowed inside %s)", pl.sources[e.src].groups[e.group].name, ep, what, guarded)
}

// refusedEndpoint reports whether export e may not be a Peer on target t
// for its endpoint, and records why.
func (pl *planner) refusedEndpoint(t *source, e *export) bool {
	why := ""
	if t.entry.Local {
		why = pl.refusedEndpoints[e]
	}
	if why != "" {
		pl.issues.conflict(ConflictEndpointNotAllowed, pl.sources[e.src].name, t.name, endpointLead, why)
	}
	return why != ""
}
