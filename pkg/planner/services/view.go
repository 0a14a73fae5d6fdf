package services

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// View is the clustermeshes/NAME/services view of a computation's output,
// so that the view and the reconciler read one result. Exports and imports
// in a host namespace the mesh may not use are counted, never named, as
// that namespace and its Services may be another tenant's: the count tells
// the mesh's readers why something is missing without telling them what.
func View(meshNamespace, meshName string, now time.Time, out *Output) *meshv1alpha1.ClusterMeshServices {
	v := &meshv1alpha1.ClusterMeshServices{
		TypeMeta:    metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMeshServices"},
		ObjectMeta:  metav1.ObjectMeta{Namespace: meshNamespace, Name: meshName},
		GeneratedAt: metav1.NewTime(now),
	}
	index := map[string]int{}
	for _, co := range out.Clusters {
		ci := meshv1alpha1.ClusterImports{Cluster: co.Name, Reachable: co.Reachable, Reason: co.Reason, Message: co.Message}
		hidden := int32(0)
		for _, imp := range co.Imports {
			if imp.Blocked == BlockedHostNamespaceNotGranted {
				hidden++
				continue
			}
			ci.Imports = append(ci.Imports, importState(imp))
		}
		ci.HiddenImports = hiddenCount(hidden)
		index[co.Name] = len(v.Clusters)
		v.Clusters = append(v.Clusters, ci)
	}
	hiddenExports := map[string]int32{}
	for _, r := range out.Exports {
		if r.Valid == ExportHostNamespaceNotGranted {
			hiddenExports[r.Cluster]++
			continue
		}
		v.Exports = append(v.Exports, meshv1alpha1.ExportState{
			Cluster: r.Cluster, Namespace: r.Namespace, Name: r.Name, Valid: r.Valid,
			Conflicts: append([]string(nil), r.Conflicts...), Endpoints: int32(r.Endpoints),
			LeftOut: append([]meshv1alpha1.ReasonCount(nil), r.LeftOut...), Stale: r.Stale,
		})
	}
	for cluster, n := range hiddenExports {
		if i, ok := index[cluster]; ok {
			v.Clusters[i].HiddenExports = hiddenCount(n)
		}
	}
	return v
}

// hiddenCount is the count of items not shown, nil when there is none.
func hiddenCount(n int32) []meshv1alpha1.ReasonCount {
	if n == 0 {
		return nil
	}
	return []meshv1alpha1.ReasonCount{{Reason: BlockedHostNamespaceNotGranted, Count: n}}
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
