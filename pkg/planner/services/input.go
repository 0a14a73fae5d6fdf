package services

import (
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Input is everything Compute depends on. Compute reads it and never
// modifies it, so cached objects can be passed as they are.
//
// Bounds: the caller passes only exported Services and what hangs off
// them, and enforces, by flag and counted, a limit of ServiceExports per
// cluster and of EndpointSlices (and endpoints) per exported Service, so an
// export flood or a giant EndpointSlice costs a bounded amount (the
// computation is linear in what it is given).
type Input struct {
	// MeshNamespace, MeshName and MeshUID identify the ClusterMesh; they go
	// into the labels of every object written (planner.ManagedLabels), and
	// only objects carrying them are ever replaced or deleted.
	MeshNamespace string
	MeshName      string
	MeshUID       types.UID
	// Installation is planner.Input.Installation: written as
	// planner.LabelInstallation when not empty.
	Installation string
	// Now stamps the conditions' lastTransitionTime.
	Now time.Time
	// Clusters are the member clusters, in any order.
	Clusters []Cluster
}

// Cluster is what is known of one member cluster.
type Cluster struct {
	// Name is the spec.clusters[].name.
	Name string
	// PodCIDRs are the entry's declared podCIDRs: only endpoint addresses
	// inside them are carried. The serviceCIDR is not used: ClusterIPs are
	// never exported, only pod endpoints.
	PodCIDRs []netip.Prefix
	// Reachable is false when the cluster did not answer: everything below
	// is then the last known state, kept (and said to be kept) rather than
	// dropped on a guess.
	Reachable bool
	// Reason is why the cluster's services are not used, empty when they
	// are; Message says it for humans. Both are only passed to the view.
	Reason, Message string
	// Yielded is true when another mesh with multi-cluster services,
	// created earlier, holds the cluster too (planner.Plan.ServicesYielded):
	// a cluster belongs to one ClusterSet, so this mesh writes and deletes
	// nothing there, neither imports nor its exports' conditions, and what
	// it wrote there before stays, as on a cluster that does not answer.
	Yielded bool
	// Namespaces are the names of the namespaces that exist in the cluster.
	Namespaces []string
	// Exports are the cluster's ServiceExports.
	Exports []*mcsv1beta1.ServiceExport
	// Services are the Services named by Exports, those at the derived
	// Service name of an import (DerivedServiceName), whoever wrote them,
	// and those this mesh wrote (by label), so that stale ones are deleted.
	Services []*corev1.Service
	// EndpointSlices are those of the exported Services (label
	// kubernetes.io/service-name), and those this mesh wrote (by label).
	EndpointSlices []*discoveryv1.EndpointSlice
	// Imports are the ServiceImports this mesh wrote, and any at the name
	// of an exported Service, whoever wrote them.
	Imports []*mcsv1beta1.ServiceImport
	// NotGranted are, for the local cluster, the namespaces the mesh may
	// neither export from nor import into, each with why (for humans):
	// exports there are not carried and imports not written.
	NotGranted map[string]string
}
