// Package clusters keeps the clients and caches of the member clusters of
// ClusterMeshes: one connection per distinct member cluster, shared by
// every mesh naming it, started when first needed and stopped when no mesh
// needs it any more. A connection caches Nodes, Peers while the Kilo Peer
// CRD is served, and, while a mesh using it has services Enabled and the
// cluster serves the mcs-api CRDs, the services objects (ServiceExports,
// ServiceImports, Namespaces, exported and written Services and
// EndpointSlices). Remote clusters are reached through tenant kubeconfigs
// kept in Secrets of the mesh's namespace, validated by ParseKubeconfig and
// followed live.
//
// Callers get one handle per connection, a Member (member.go): what its
// caches hold, and what may be done through it (write Peers and services
// objects, list and delete live what meshes wrote). A connection no mesh
// uses any more is held (holds.go) while what the mesh wrote there may
// still have to be removed, for as long as the caller says.
package clusters
