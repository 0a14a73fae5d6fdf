package services

import "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"

// Reasons are stable identifiers users and tools match on; they never
// change once released. The KEP's own reasons of ServiceExport and
// ServiceImport conditions are the mcs-api constants (mcsv1beta1.*).

// Why an endpoint of an exported Service is left out of every import.
const (
	// LeftOutOutsidePodCIDRs: the address is not inside the exporting
	// cluster's declared podCIDRs, so Kilo would not route it, or would route
	// it where it must not go. Such an address is never written anywhere.
	LeftOutOutsidePodCIDRs = "OutsidePodCIDRs"
	// LeftOutInvalidAddress: the address does not parse, or is not of the
	// EndpointSlice's address type.
	LeftOutInvalidAddress = "InvalidAddress"
	// LeftOutUnsupportedAddressType: FQDN EndpointSlices are not carried.
	LeftOutUnsupportedAddressType = "UnsupportedAddressType"
	// LeftOutNotReady: the endpoint's Ready condition is false.
	LeftOutNotReady = "NotReady"
	// LeftOutDuplicateAddress: another endpoint of the export has the address.
	LeftOutDuplicateAddress = "DuplicateAddress"
)

// Why an import is not written, or not whole, in one member cluster.
const (
	// BlockedNamespaceMissing: the namespace does not exist in the cluster;
	// namespaces are never created.
	BlockedNamespaceMissing = "NamespaceMissing"
	// BlockedImportNotOwned: a ServiceImport of that name exists that this
	// mesh did not write (a user's, or another mesh's); it is never
	// overwritten, and nothing else of the import is written there.
	BlockedImportNotOwned = "ImportNotOwned"
	// BlockedDerivedServiceTaken: a Service this mesh did not write holds
	// the derived Service's name; it is never overwritten, so the
	// ClusterSetIP import gets no IP and no endpoints in that cluster. It
	// is also the reason of the ServiceImport's Ready=False condition.
	BlockedDerivedServiceTaken = "DerivedServiceTaken"
	// BlockedHostNamespaceNotGranted: the namespace is one of the local
	// (host) cluster, where the server writes with its own identity, and
	// neither the mesh's author may write the import's objects there by
	// hand nor a ClusterMeshGrant names it (serviceNamespaces). Nothing of
	// the import is written there.
	BlockedHostNamespaceNotGranted = "HostNamespaceNotGranted"
	// BlockedClusterShared: another mesh with multi-cluster services,
	// created earlier, holds the cluster too (Cluster.Yielded), and a
	// cluster belongs to one ClusterSet; nothing of the import is written
	// there. It is the plan's warning of the same fact.
	BlockedClusterShared = planner.WarningServicesClusterShared
)

// ExportHostNamespaceNotGranted is the reason of the Valid=False condition
// of a ServiceExport in a namespace of the local cluster that the mesh may
// not export from (as BlockedHostNamespaceNotGranted): its Service and
// endpoints are not read, and it is imported nowhere.
const ExportHostNamespaceNotGranted = BlockedHostNamespaceNotGranted
