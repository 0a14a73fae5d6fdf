package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PeerKind is the kind of a Kilo Peer.
const PeerKind = "Peer"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster

// Peer is a WireGuard peer that should have access to the VPN.
type Peer struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Specification of the desired behavior of the Kilo Peer.
	Spec PeerSpec `json:"spec"`
}

// PeerSpec is the description and configuration of a peer.
type PeerSpec struct {
	// AllowedIPs is the list of IP addresses that are allowed
	// for the given peer's tunnel.
	// +listType=atomic
	AllowedIPs []string `json:"allowedIPs"`
	// Endpoint is the initial endpoint for connections to the peer.
	// +optional
	Endpoint *PeerEndpoint `json:"endpoint,omitempty"`
	// PersistentKeepalive is the interval in seconds of the emission
	// of keepalive packets by the peer. This defaults to 0, which
	// disables the feature.
	// +optional
	PersistentKeepalive int `json:"persistentKeepalive,omitempty"`
	// PresharedKey is the optional symmetric encryption key for the peer.
	// +optional
	PresharedKey string `json:"presharedKey,omitempty"`
	// PublicKey is the WireGuard public key for the peer.
	PublicKey string `json:"publicKey"`
}

// PeerEndpoint represents a WireGuard endpoint, which is an IP:port tuple.
type PeerEndpoint struct {
	// DNSOrIP is a DNS name or an IP address.
	DNSOrIP DNSOrIP `json:"dnsOrIP"`
	// Port must be a valid port number.
	Port int32 `json:"port"`
}

// DNSOrIP represents either a DNS name or an IP address.
// Kilo uses dns when both are set, so set exactly one.
type DNSOrIP struct {
	// DNS must be a valid RFC 1123 subdomain.
	// +optional
	DNS string `json:"dns,omitempty"`
	// IP must be a valid IP address.
	// +optional
	IP string `json:"ip,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PeerList is a list of peers.
type PeerList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is a list of peers.
	Items []Peer `json:"items"`
}
