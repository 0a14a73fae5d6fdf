package services

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Output is the desired state of every member cluster and the outcome of
// every export. Every list is sorted, so equal inputs give equal outputs.
type Output struct {
	// Clusters are sorted by name.
	Clusters []ClusterOutput
	// Exports are sorted by namespace, name, then cluster.
	Exports []ExportResult
}

// ClusterOutput is what one member cluster must hold.
type ClusterOutput struct {
	Name      string
	Reachable bool
	// Reason and Message are the input cluster's: why its services are not used.
	Reason, Message string
	// Yielded is the input cluster's: nothing is written to or deleted on
	// it, its exports' conditions included, and every import is blocked
	// there (BlockedClusterShared).
	Yielded bool
	// Imports are sorted by namespace and name.
	Imports []Import
	// Delete lists the objects this mesh wrote that are no longer wanted.
	Delete Deletions
}

// Import is one imported service in one cluster.
type Import struct {
	Namespace, Name string
	// Type is the merged type, ClusterSetIP or Headless.
	Type mcsv1beta1.ServiceImportType
	// ServiceImport is the desired object, status included; nil when
	// Blocked is BlockedNamespaceMissing or BlockedImportNotOwned.
	ServiceImport *mcsv1beta1.ServiceImport
	// DerivedService is the selector-less Service of a ClusterSetIP
	// import; nil for Headless and when blocked. The reconciler makes the
	// ServiceImport its owner once that exists.
	DerivedService *corev1.Service
	// EndpointSlices hold the exporting clusters' carried endpoints.
	EndpointSlices []*discoveryv1.EndpointSlice
	// Sources are the exporting clusters, sorted.
	Sources []string
	// Endpoints is the number of endpoints in EndpointSlices.
	Endpoints int
	// Blocked is a Blocked* reason, or empty; Message says it for humans.
	Blocked string
	Message string
}

// Deletions are objects of one cluster, by namespace and name.
type Deletions struct {
	Imports        []types.NamespacedName
	Services       []types.NamespacedName
	EndpointSlices []types.NamespacedName
}

// ExportResult is how one ServiceExport fared.
type ExportResult struct {
	Cluster, Namespace, Name string
	// Conditions are the export's Valid, Ready and Conflict conditions.
	Conditions []metav1.Condition
	// Valid is the reason of the Valid condition.
	Valid string
	// Conflicts are the Conflict reasons, empty when there is none.
	Conflicts []string
	// Endpoints is the number of the export's endpoints carried.
	Endpoints int
	// LeftOut counts the endpoints left out, by LeftOut* reason, sorted.
	LeftOut []meshv1alpha1.ReasonCount
	// Stale is true when the exporting cluster is unreachable and its last
	// known endpoints are carried.
	Stale bool
}
