package services

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// View is the clustermeshes/NAME/services view of a computation's output,
// so that the view and the reconciler read one result.
func View(meshNamespace, meshName string, now time.Time, out *Output) *meshv1alpha1.ClusterMeshServices {
	v := &meshv1alpha1.ClusterMeshServices{
		TypeMeta:    metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMeshServices"},
		ObjectMeta:  metav1.ObjectMeta{Namespace: meshNamespace, Name: meshName},
		GeneratedAt: metav1.NewTime(now),
	}
	for _, co := range out.Clusters {
		ci := meshv1alpha1.ClusterImports{Cluster: co.Name, Reachable: co.Reachable}
		for _, imp := range co.Imports {
			ci.Imports = append(ci.Imports, importState(imp))
		}
		v.Clusters = append(v.Clusters, ci)
	}
	for _, r := range out.Exports {
		v.Exports = append(v.Exports, meshv1alpha1.ExportState{
			Cluster: r.Cluster, Namespace: r.Namespace, Name: r.Name, Valid: r.Valid,
			Conflicts: append([]string(nil), r.Conflicts...), Endpoints: int32(r.Endpoints),
			LeftOut: append([]meshv1alpha1.ReasonCount(nil), r.LeftOut...), Stale: r.Stale,
		})
	}
	return v
}

func importState(imp Import) meshv1alpha1.ImportState {
	st := meshv1alpha1.ImportState{
		Namespace: imp.Namespace, Name: imp.Name, Type: string(imp.Type), Endpoints: int32(imp.Endpoints),
		SourceClusters: append([]string(nil), imp.Sources...), Blocked: imp.Blocked, Message: imp.Message,
	}
	if si := imp.ServiceImport; si != nil {
		st.IPs = append([]string(nil), si.Spec.IPs...)
		for _, p := range si.Spec.Ports {
			st.Ports = append(st.Ports, meshv1alpha1.ImportPort{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port})
		}
	}
	if imp.DerivedService != nil {
		st.DerivedService = imp.DerivedService.Name
	}
	return st
}
