package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// checkServicesClusters refuses a mesh with multiClusterServices Enabled
// that lists a cluster another mesh with services Enabled, in any
// namespace, has verified: a cluster belongs to at most one ClusterSet
// (KEP-1645), or two meshes would write one ServiceImport. As for networks,
// only verified identities count, so nobody can squat a cluster by naming
// it, and a later mesh cannot block an earlier one's updates of an entry
// it held with services on. The message names no other tenant's object.
// An entry admission cannot identify (Secret unreadable, server not yet
// verified) is not refused here: once both meshes verified the cluster, the
// plan reports it on both (ServicesClusterShared, naming only each mesh's
// own entry), the later mesh writes nothing of its services there, and its
// next spec change keeping the cluster is refused here.
func checkServicesClusters(mesh, old *meshv1alpha1.ClusterMesh, ours []entryRef, meshes cache.Indexer, members Members) field.ErrorList {
	if mesh.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled {
		return nil
	}
	wasOn := old != nil && old.Spec.MultiClusterServices == meshv1alpha1.MultiClusterServicesEnabled
	held := map[string]bool{}
	if wasOn {
		for _, c := range old.Spec.Clusters {
			held[c.Name] = true
		}
	}
	taken := make([]bool, len(ours))
	for _, obj := range meshes.List() {
		other, ok := obj.(*meshv1alpha1.ClusterMesh)
		if !ok || other.Namespace == mesh.Namespace && other.Name == mesh.Name ||
			other.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled {
			continue
		}
		later := !validation.Precedes(other, mesh)
		for _, id := range members.Identities(other) {
			for i := range ours {
				if ours[i].is(id) && !(later && held[mesh.Spec.Clusters[i].Name]) {
					taken[i] = true
				}
			}
		}
	}
	var errs field.ErrorList
	for i, t := range taken {
		if !t {
			continue
		}
		name := mesh.Spec.Clusters[i].Name
		if wasOn {
			errs = append(errs, field.Invalid(field.NewPath("spec", "clusters").Index(i), name,
				"already belongs to another ClusterMesh with multiClusterServices Enabled; a cluster belongs to at most one ClusterSet"))
			continue
		}
		errs = append(errs, field.Invalid(field.NewPath("spec", "multiClusterServices"), mesh.Spec.MultiClusterServices,
			fmt.Sprintf("spec.clusters[%d] (%s) already belongs to another ClusterMesh with multiClusterServices Enabled; a cluster belongs to at most one ClusterSet", i, name)))
	}
	return errs
}
