package v1alpha1

import (
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterMeshServices is the clustermeshes/NAME/services view of a mesh with
// multiClusterServices Enabled: what every member cluster imports, and how
// every ServiceExport fared. It is built from the same computation the
// reconciler writes from, so what it shows is what gets written.
type ClusterMeshServices struct {
	metav1.TypeMeta `json:",inline"`
	// metadata carries the name and namespace of the ClusterMesh.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// generatedAt is the time the view was computed for.
	GeneratedAt metav1.Time `json:"generatedAt"`
	// clusters holds what each member cluster imports, sorted by cluster name.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Clusters []ClusterImports `json:"clusters,omitempty"`
	// exports holds every ServiceExport of the mesh, sorted by namespace,
	// name, then cluster, except those counted in clusters[].hiddenExports.
	// +optional
	// +listType=atomic
	Exports []ExportState `json:"exports,omitempty"`
}

// ClusterImports is what one member cluster imports.
type ClusterImports struct {
	// cluster is a spec.clusters[].name.
	Cluster string `json:"cluster"`
	// reachable is whether the cluster's API server answered; an unreachable
	// cluster's imports are what it should hold, written once it answers.
	Reachable bool `json:"reachable"`
	// reason is why the cluster's services are not used, a stable reason
	// (MCSCRDMissing, TooManyServiceExports, TooManyEndpoints, Pending, or
	// one of the cluster's connection); empty when they are. Its exports
	// are then unknown, or their last known endpoints are kept.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says why for humans.
	// +optional
	Message string `json:"message,omitempty"`
	// imports are its ServiceImports, sorted by namespace and name.
	// +optional
	// +listType=atomic
	Imports []ImportState `json:"imports,omitempty"`
	// hiddenImports counts the imports of this cluster that are not shown,
	// by stable reason: HostNamespaceNotGranted for a namespace of the host
	// cluster the mesh may not use, which may be another tenant's.
	// +optional
	// +listType=map
	// +listMapKey=reason
	HiddenImports []ReasonCount `json:"hiddenImports,omitempty"`
	// hiddenExports counts the ServiceExports of this cluster that are not
	// listed in exports, by stable reason: HostNamespaceNotGranted for a
	// namespace of the host cluster the mesh may not use; such an export is
	// Valid=False with that reason and imported nowhere.
	// +optional
	// +listType=map
	// +listMapKey=reason
	HiddenExports []ReasonCount `json:"hiddenExports,omitempty"`
}

// ImportState is one ServiceImport of one member cluster.
type ImportState struct {
	// namespace of the ServiceImport (the exported Service's namespace).
	Namespace string `json:"namespace"`
	// name of the ServiceImport (the exported Service's name).
	Name string `json:"name"`
	// type is ClusterSetIP or Headless.
	Type string `json:"type"`
	// ports are the union of the exported Services' ports.
	// +optional
	// +listType=atomic
	Ports []ImportPort `json:"ports,omitempty"`
	// ips are the ClusterSetIPs (the derived Service's clusterIPs), empty for
	// Headless and until the derived Service is allocated.
	// +optional
	// +listType=atomic
	IPs []string `json:"ips,omitempty"`
	// derivedService is the name of the selector-less Service that carries a
	// ClusterSetIP import in this cluster; empty for Headless.
	// +optional
	DerivedService string `json:"derivedService,omitempty"`
	// sourceClusters are the clusters whose endpoints the import carries, sorted.
	// +optional
	// +listType=atomic
	SourceClusters []string `json:"sourceClusters,omitempty"`
	// endpoints is the number of ready endpoints written for the import.
	Endpoints int32 `json:"endpoints"`
	// blocked, when set, is a stable reason why the import is not written in
	// this cluster (for example DerivedServiceTaken or ImportNotOwned).
	// +optional
	Blocked string `json:"blocked,omitempty"`
	// message explains blocked in a sentence.
	// +optional
	Message string `json:"message,omitempty"`
}

// ImportPort is one port of an imported service.
type ImportPort struct {
	// name of the port; empty when the service has a single unnamed port.
	// +optional
	Name string `json:"name,omitempty"`
	// protocol is TCP, UDP or SCTP.
	Protocol string `json:"protocol"`
	// port is the service port.
	Port int32 `json:"port"`
}

// ExportState is how one ServiceExport of one member cluster fared.
type ExportState struct {
	// cluster is the exporting cluster's spec.clusters[].name.
	Cluster string `json:"cluster"`
	// namespace of the ServiceExport.
	Namespace string `json:"namespace"`
	// name of the ServiceExport and of the Service it exports.
	Name string `json:"name"`
	// valid is the reason of the export's Valid condition: Valid, NoService
	// or InvalidServiceType.
	Valid string `json:"valid"`
	// conflicts are the reasons of the export's Conflict condition (for
	// example PortConflict); empty when there is none.
	// +optional
	// +listType=atomic
	Conflicts []string `json:"conflicts,omitempty"`
	// endpoints is the number of the export's endpoints carried to other clusters.
	Endpoints int32 `json:"endpoints"`
	// leftOut counts the endpoints left out, by stable reason (for example
	// OutsidePodCIDRs or NotReady).
	// +optional
	// +listType=map
	// +listMapKey=reason
	LeftOut []ReasonCount `json:"leftOut,omitempty"`
	// stale is true when the exporting cluster is unreachable and its last
	// known endpoints are kept rather than dropped on a guess.
	// +optional
	Stale bool `json:"stale,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterMeshServicesOptions are the query parameters of the services view.
type ClusterMeshServicesOptions struct {
	metav1.TypeMeta `json:",inline"`

	// cluster restricts the view to one member cluster: what it imports and
	// the ServiceExports it holds.
	// +optional
	Cluster string `json:"cluster,omitempty"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &ClusterMeshServices{}, &ClusterMeshServicesOptions{})
		return s.AddConversionFunc((*url.Values)(nil), (*ClusterMeshServicesOptions)(nil), func(a, b interface{}, _ conversion.Scope) error {
			params, err := viewQuery(a.(*url.Values), "services", "cluster")
			if err != nil {
				return err
			}
			out := b.(*ClusterMeshServicesOptions)
			*out = ClusterMeshServicesOptions{TypeMeta: out.TypeMeta, Cluster: params["cluster"]}
			return nil
		})
	})
}
