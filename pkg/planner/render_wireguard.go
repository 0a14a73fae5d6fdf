package planner

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// RenderWireGuard renders the desired Peers of one cluster as the wg-quick
// style [Peer] sections kg loads on each of that cluster's leaders, each
// preceded by a comment naming its source cluster, group and leader. There
// is no [Interface] section: its private key never leaves the node.
func RenderWireGuard(p *Plan, cluster string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# WireGuard peers of cluster %s in ClusterMesh %s/%s, planned for %s.\n",
		cluster, p.View.Namespace, p.View.Name, p.View.GeneratedAt.UTC().Format("2006-01-02T15:04:05Z"))
	b.WriteString("# kg adds them to the WireGuard interface of every leader of the cluster. It sends\n")
	b.WriteString("# keepalives at its own node's kilo.squat.ai/persistent-keepalive; a Peer's keepalive\n")
	b.WriteString("# tells it to accept the endpoint the peer roams to.\n")
	kept := map[string]string{}
	if tp, ok := p.Target(cluster); ok {
		for _, k := range tp.Kept {
			kept[k.Name] = k.Reason
		}
	}
	for _, peer := range p.DesiredPeers[cluster].All() {
		fmt.Fprintf(&b, "\n# %s/%s, leader %s (Peer %s)", oneLine(peer.Labels[LabelSourceCluster]),
			oneLine(peer.Annotations[AnnotationSourceGroup]), oneLine(peer.Annotations[AnnotationSourceLeader]), peer.Name)
		if r, ok := kept[peer.Name]; ok {
			fmt.Fprintf(&b, ", kept as it is: %s", r)
		}
		if r := peer.Annotations[AnnotationRelays]; r != "" {
			fmt.Fprintf(&b, "\n# relay: also carries the networks of %s, forwarded by that leader", oneLine(strings.ReplaceAll(r, ",", ", ")))
		}
		b.WriteString("\n[Peer]\n")
		fmt.Fprintf(&b, "PublicKey = %s\n", peer.Spec.PublicKey)
		fmt.Fprintf(&b, "AllowedIPs = %s\n", strings.Join(peer.Spec.AllowedIPs, ", "))
		if e := PeerEndpointString(peer.Spec.Endpoint); e != "" {
			fmt.Fprintf(&b, "Endpoint = %s\n", e)
		}
		if peer.Spec.PersistentKeepalive > 0 {
			fmt.Fprintf(&b, "PersistentKeepalive = %d\n", peer.Spec.PersistentKeepalive)
		}
	}
	return b.Bytes()
}

// PeerEndpointString is host:port with an IPv6 address in brackets, as
// WireGuard and kubectl users write it; empty for no endpoint.
func PeerEndpointString(e *kilov1alpha1.PeerEndpoint) string {
	if e == nil {
		return ""
	}
	host := e.DNSOrIP.DNS
	if host == "" {
		host = e.DNSOrIP.IP
	}
	return net.JoinHostPort(host, strconv.Itoa(int(e.Port)))
}

// oneLine keeps a value from breaking out of its comment line.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}
