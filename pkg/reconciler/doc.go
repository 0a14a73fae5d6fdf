// Package reconciler makes every member cluster of every ClusterMesh hold
// exactly the Kilo Peers the mesh's plan shows, inside the server process.
//
// Every replica keeps the caches (the ClusterMesh informer and the
// member-cluster caches of clusters.Manager serve the views too); only the
// replica holding the Lease reconciles.
// A pass over one mesh computes its plan with the same Planner as the views,
// server-side-applies the Peers the plan creates or updates, deletes the
// managed Peers the plan drops, and writes the status when it changed. With
// nothing changing, a pass writes nothing.
//
// The plan already decides what is safe: Peers of an unreachable cluster
// are kept, Peers owned by someone else are never planned. The reconciler
// adds what only writing can know: it re-checks ownership against the
// cache right before each write, applies with force only Peers it owns,
// deletes only with the cached UID as precondition, and keeps failures of
// one cluster from stopping the others.
package reconciler
