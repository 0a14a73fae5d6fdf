// Package services computes what a mesh with multiClusterServices Enabled
// keeps on its member clusters for the Multi-Cluster Services API
// (KEP-1645, sigs.k8s.io/mcs-api v1beta1): for every exported Service, the
// ServiceImport of every member cluster where its namespace exists, the
// derived Service that carries a ClusterSetIP import, the EndpointSlices
// holding the exporting clusters' ready endpoints, and the conditions of
// every ServiceExport. Compute is the one computation behind the
// clustermeshes/NAME/services view (View) and the reconciler, so what a
// user previews is what gets written.
//
// Like pkg/planner it is pure (pkg/planner's TestPurity has a row for it):
// no I/O, no goroutines, the clock an input. Its input grows with exported
// services only: per cluster the ServiceExports, the Services they name,
// those Services' EndpointSlices, and the objects this mesh wrote, never
// all Services or EndpointSlices of a cluster. The bounds the caller enforces before it
// calls (by flag, counted) are documented on Input.
package services
