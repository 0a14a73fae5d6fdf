package v1alpha1

import (
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// Formats of the clustermeshes/NAME/peers view.
const (
	// PeersFormatWireGuard renders the Peers of one target cluster as the
	// [Peer] sections its leaders would load.
	PeersFormatWireGuard = "wireguard"
	// PeersFormatDOT renders the whole mesh as a Graphviz graph.
	PeersFormatDOT = "dot"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterMeshPeers is the clustermeshes/NAME/peers view without a cluster
// parameter: the Kilo Peers the mesh wants on every member cluster.
type ClusterMeshPeers struct {
	metav1.TypeMeta `json:",inline"`
	// metadata carries the name and namespace of the ClusterMesh.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// targets holds the desired Peers of every member cluster, sorted by cluster name.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Targets []TargetPeers `json:"targets,omitempty"`
}

// TargetPeers are the Peers one member cluster must hold.
type TargetPeers struct {
	// cluster is a spec.clusters[].name.
	Cluster string `json:"cluster"`
	// peers are the desired Kilo Peers, sorted by name.
	// +optional
	// +listType=atomic
	Peers []kilov1alpha1.Peer `json:"peers,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterMeshPeersOptions are the query parameters of the peers view.
type ClusterMeshPeersOptions struct {
	metav1.TypeMeta `json:",inline"`

	// cluster restricts the view to the Peers of one member cluster, served
	// as a kilo.squat.ai/v1alpha1 PeerList that kubectl apply accepts.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// format is empty for the API object, "wireguard" for the WireGuard
	// configuration of one cluster, or "dot" for a Graphviz graph of the mesh.
	// +optional
	Format string `json:"format,omitempty"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &ClusterMeshPeers{}, &ClusterMeshPeersOptions{})
		return s.AddConversionFunc((*url.Values)(nil), (*ClusterMeshPeersOptions)(nil), func(a, b interface{}, _ conversion.Scope) error {
			return convertURLValuesToPeersOptions(a.(*url.Values), b.(*ClusterMeshPeersOptions))
		})
	})
}

// convertURLValuesToPeersOptions reads the query; unknown parameters are
// refused so that a typo never silently returns the whole mesh.
func convertURLValuesToPeersOptions(in *url.Values, out *ClusterMeshPeersOptions) error {
	params, err := viewQuery(in, "peers", "cluster", "format")
	if err != nil {
		return err
	}
	*out = ClusterMeshPeersOptions{TypeMeta: out.TypeMeta, Cluster: params["cluster"], Format: params["format"]}
	return nil
}
