package planner

import meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"

// Clusters shared by two meshes with multi-cluster services. A cluster
// belongs to at most one ClusterSet (KEP-1645), which admission enforces
// only for clusters it can identify at write time; a mesh written while it
// could not (its Secret unreadable, its server not verified yet) may share
// a cluster with another services mesh once both are verified. The later
// mesh yields the cluster (its services computation writes nothing there,
// so the two never rewrite one export's conditions), and the plan reports
// the sharing on both, naming this mesh's entry and nothing of the other mesh.

// OtherServicesMesh is what a plan is told of the other meshes with
// multiClusterServices Enabled that verified one of this mesh's clusters.
type OtherServicesMesh struct {
	// Earlier is true when one of them takes precedence over this mesh
	// (created first, then the lower UID): admission refuses this mesh's
	// next spec change that keeps the cluster with services Enabled.
	Earlier bool
}

const (
	servicesSharedLater = "another ClusterMesh with multiClusterServices Enabled, created earlier, has verified this cluster too, " +
		"and a cluster belongs to at most one ClusterSet: this mesh writes nothing of its services there (no imports, no conditions of the " +
		"cluster's ServiceExports; what it wrote there before stays), and the next change of this mesh's spec that keeps the cluster " +
		"with multiClusterServices Enabled is refused; remove the cluster from this mesh or disable its services"
	servicesSharedEarlier = "another ClusterMesh with multiClusterServices Enabled, created later, has verified this cluster too, " +
		"which admission could not refuse when it was written, and a cluster belongs to at most one ClusterSet: imports the other mesh wrote " +
		"there first are blocked for this one (ImportNotOwned); this mesh keeps the cluster and alone writes the conditions of its " +
		"ServiceExports, the other mesh writes nothing of its services there, and its next spec change that keeps it with services Enabled is refused"
)

// checkServicesShared warns of every cluster of a mesh with services
// Enabled that another such mesh has verified too, and returns, sorted,
// those on which an earlier mesh takes precedence.
func (pl *planner) checkServicesShared() []string {
	if pl.in.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled {
		return nil
	}
	var yielded []string
	for _, s := range pl.sources {
		other, shared := pl.in.OtherServicesMeshes[s.name]
		if !shared {
			continue
		}
		lead := servicesSharedEarlier
		if other.Earlier {
			lead = servicesSharedLater
			yielded = append(yielded, s.name)
		}
		pl.issues.warning(WarningServicesClusterShared, s.name, "", lead, "")
	}
	return yielded
}
