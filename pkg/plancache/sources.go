package plancache

import (
	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// source is one input of a plan besides the mesh itself and the clock. It
// fills its part of the planner's input and reports every mesh whose part
// changed, which invalidates that mesh's plan. A plan is only as fresh as
// its stalest input: whatever else the planner comes to read (grants,
// other meshes' claims) must be another source, never read around the cache.
type source interface {
	// fill fails when the source cannot tell yet: no plan is better
	// than one that acts on half the facts.
	fill(mesh *meshv1alpha1.ClusterMesh, in *planner.Input) error
	onChange(f func(types.NamespacedName))
	// hasSynced reports whether the source has read its inputs once.
	hasSynced() bool
}

// Members is what the cache uses of the member-cluster caches
// (clusters.Manager): their contents, the verified identities of their
// clusters and their change notifications.
type Members interface {
	Snapshot(mesh *meshv1alpha1.ClusterMesh) map[string]clusters.ClusterState
	Identities(mesh *meshv1alpha1.ClusterMesh) map[string]string
	AddChangeHandler(f func(types.NamespacedName))
}

var _ Members = (*clusters.Manager)(nil)

// memberSource gives the planner the Nodes and Peers of every member cluster.
type memberSource struct{ members Members }

func (s memberSource) fill(mesh *meshv1alpha1.ClusterMesh, in *planner.Input) error {
	states := s.members.Snapshot(mesh)
	in.Clusters = make(map[string]planner.ClusterSnapshot, len(states))
	for name, st := range states {
		in.Clusters[name] = snapshot(st)
	}
	return nil
}

func (s memberSource) onChange(f func(types.NamespacedName)) { s.members.AddChangeHandler(f) }

// hasSynced is true: a member cluster whose caches have not synced is
// planned as unknown (see snapshot), which decides nothing.
func (s memberSource) hasSynced() bool { return true }

// snapshot tells the planner what it may rely on: a cluster whose caches
// never synced is as unknown as an unreachable one, and one that synced but
// stopped answering keeps its last known nodes, so its Peers elsewhere stay.
// The credential's expiry is known either way: an expired one is a likely
// reason the cluster stopped answering.
func snapshot(s clusters.ClusterState) planner.ClusterSnapshot {
	if !s.Synced {
		msg := s.LastError
		if msg == "" {
			msg = "the caches of this cluster have not synced yet"
		}
		return planner.ClusterSnapshot{Reachable: false, Error: msg, CredentialExpiry: s.CredentialExpiry, Identity: s.Identity, Connection: s.Connection}
	}
	return planner.ClusterSnapshot{Reachable: s.Reachable, Error: s.LastError, Nodes: s.Nodes, Peers: s.Peers,
		CredentialExpiry: s.CredentialExpiry, Identity: s.Identity, Connection: s.Connection}
}
