// Package reconciler makes every member cluster of every ClusterMesh hold
// exactly the Kilo Peers and the multi-cluster services objects the mesh's
// plan shows, inside the server process, and removes them once the mesh
// or the cluster goes.
//
// Every replica keeps the caches (the ClusterMesh informer and the
// member-cluster caches of clusters.Manager serve the views too); only the
// replica holding the Lease reconciles. A pass over one mesh (sync.go)
// runs its stages in order, each in its own file:
//
//	sync.go          plan, on the connections the entries reach now
//	applyplan.go     the Peers the plan creates, updates or drops, on every
//	apply.go           member at once (one target's writes)
//	services.go      the ServiceImports, derived Services and EndpointSlices,
//	servicesapply.go   and the ServiceExport conditions, the services
//	                   computation shows (servicescompare.go: what is current)
//	departed.go      the entries that left the mesh
//	status.go        the status, written only when it changes, with every
//	conditions.go      condition it carries
//	metrics.go       the per-mesh metrics
//	events.go        what the pass did and the facts it found first
//	requeue.go       when to look again without a change
//
// With nothing changing, a pass writes nothing. The plan already decides
// what is safe: Peers of an unreachable cluster are kept, Peers owned by
// someone else are never planned. The reconciler adds what only writing
// can know: it re-checks ownership against the cache right before each
// write, applies with force only Peers it owns, deletes only with the UID
// as precondition, and keeps failures of one cluster from stopping the
// others. The fair writer (fairwriter.go) runs every write, in turns
// between namespaces and meshes.
//
// Everything a mesh wrote on a member leaves by one path, cleanup.go,
// whichever way out: the finalizer (finalize.go), an entry that left
// (departed.go), a mesh deleted without its finalizer (vanished.go), the
// orphan sweep of meshes gone while no replica ran (orphans.go), services
// Disabled (services.go). Each way out only chooses the connection
// (a clusters.Member, often one clusters.Manager holds past its use) and
// how long to try.
package reconciler
