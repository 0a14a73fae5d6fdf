package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// checkDuplicates refuses two entries of the mesh that reach one cluster:
// the same kubeconfig server, or one identity verified by connections that
// exist (the local cluster's included). What admission cannot tell (a
// Secret rewritten later, a server known under two names before either is
// verified) the plan reports as a SameCluster conflict once it can.
func checkDuplicates(mesh *meshv1alpha1.ClusterMesh, ours []entryRef) field.ErrorList {
	var errs field.ErrorList
	for j := range ours {
		for i := 0; i < j; i++ {
			if ours[i].sameAs(ours[j]) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusters").Index(j), mesh.Spec.Clusters[j].Name,
					fmt.Sprintf("reaches the same cluster as spec.clusters[%d] (%s): list a cluster once per mesh", i, mesh.Spec.Clusters[i].Name)))
				break
			}
		}
	}
	return errs
}

// sameAs reports whether two entries are known to reach one cluster.
func (r entryRef) sameAs(o entryRef) bool {
	if r.server != "" && r.server == o.server {
		return true
	}
	for _, id := range r.candidates {
		if o.is(id) {
			return true
		}
	}
	return false
}
