package apiserver

import (
	"k8s.io/utils/clock"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermesh"
)

// cachePlanner plans a mesh from what the member-cluster caches hold now.
// The views and the reconciler share this one instance, so what users
// preview is what gets applied.
type cachePlanner struct {
	clusters *clusters.Manager
	clock    clock.PassiveClock
}

var (
	_ clustermesh.Planner = &cachePlanner{}
	_ reconciler.Planner  = &cachePlanner{}
)

func (p *cachePlanner) Plan(mesh *meshv1alpha1.ClusterMesh) (*planner.Plan, error) {
	in := planner.Input{
		MeshNamespace: mesh.Namespace,
		MeshName:      mesh.Name,
		MeshUID:       mesh.UID,
		Spec:          mesh.Spec,
		Clusters:      map[string]planner.ClusterSnapshot{},
		Now:           p.clock.Now(),
	}
	for name, s := range p.clusters.Snapshot(mesh) {
		in.Clusters[name] = snapshot(s)
	}
	return planner.Compute(in)
}

// snapshot tells the planner what it may rely on: a cluster whose caches
// never synced is as unknown as an unreachable one, and one that synced but
// stopped answering keeps its last known nodes, so its Peers elsewhere stay.
func snapshot(s clusters.ClusterState) planner.ClusterSnapshot {
	if !s.Synced {
		msg := s.LastError
		if msg == "" {
			msg = "the caches of this cluster have not synced yet"
		}
		return planner.ClusterSnapshot{Reachable: false, Error: msg}
	}
	return planner.ClusterSnapshot{Reachable: s.Reachable, Error: s.LastError, Nodes: s.Nodes, Peers: s.Peers}
}
