package services

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// exportResults are the conditions of every export, as the KEP describes
// them, and what each carried and left out. The Ready message also names
// the clusters where the import could not be written, and why.
func (c *computation) exportResults(svcs []*service, clusters []ClusterOutput) []ExportResult {
	blocked := map[types.NamespacedName][]string{}
	for _, co := range clusters {
		for _, imp := range co.Imports {
			if imp.Blocked != "" {
				key := types.NamespacedName{Namespace: imp.Namespace, Name: imp.Name}
				blocked[key] = append(blocked[key], fmt.Sprintf("%s (%s)", co.Name, imp.Blocked))
			}
		}
	}
	var out []ExportResult
	for _, s := range svcs {
		byCluster := slices.SortedFunc(slices.Values(s.exports), func(a, b *export) int { return strings.Compare(a.cluster.Name, b.cluster.Name) })
		for _, e := range byCluster {
			out = append(out, c.exportResult(s, e, blocked[s.key]))
		}
	}
	return out
}

func (c *computation) exportResult(s *service, e *export, blocked []string) ExportResult {
	r := ExportResult{
		Cluster: e.cluster.Name, Namespace: s.key.Namespace, Name: s.key.Name,
		Valid: string(e.valid), Conflicts: e.conflicts, Endpoints: e.carried, Stale: !e.cluster.Reachable,
	}
	for _, reason := range slices.Sorted(maps.Keys(e.leftOut)) {
		r.LeftOut = append(r.LeftOut, meshv1alpha1.ReasonCount{Reason: reason, Count: int32(e.leftOut[reason])})
	}
	cond := func(t mcsv1beta1.ServiceExportConditionType, ok bool, reason, msg string) metav1.Condition {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		return metav1.Condition{Type: string(t), Status: status, Reason: reason, Message: msg,
			ObservedGeneration: e.obj.Generation, LastTransitionTime: metav1.NewTime(c.in.Now)}
	}
	valid := e.valid == mcsv1beta1.ServiceExportReasonValid
	var validMsg string
	switch e.valid {
	case mcsv1beta1.ServiceExportReasonValid:
		validMsg = "the Service can be exported"
	case mcsv1beta1.ServiceExportReasonNoService:
		validMsg = fmt.Sprintf("there is no Service %s in this cluster", s.key)
	case mcsv1beta1.ServiceExportReasonInvalidServiceType:
		validMsg = "a Service of type ExternalName cannot be exported"
	case ExportHostNamespaceNotGranted:
		validMsg = "this namespace of the cluster the server runs in may not be exported from by this mesh: " + e.deniedWhy
	}
	r.Conditions = append(r.Conditions, cond(mcsv1beta1.ServiceExportConditionValid, valid, string(e.valid), validMsg))
	if valid {
		r.Conditions = append(r.Conditions, cond(mcsv1beta1.ServiceExportConditionReady, true, string(mcsv1beta1.ServiceExportReasonExported), readyMessage(r, blocked)))
	} else {
		r.Conditions = append(r.Conditions, cond(mcsv1beta1.ServiceExportConditionReady, false, string(mcsv1beta1.ServiceExportReasonFailed), "the export is not valid: "+validMsg))
	}
	if len(e.conflicts) > 0 {
		r.Conditions = append(r.Conditions, cond(mcsv1beta1.ServiceExportConditionConflict, true, strings.Join(e.conflicts, ","),
			fmt.Sprintf("the exports of %s differ; the oldest export (cluster %s) decides", s.key, s.valid[0].cluster.Name)))
	} else {
		r.Conditions = append(r.Conditions, cond(mcsv1beta1.ServiceExportConditionConflict, false, string(mcsv1beta1.ServiceExportReasonNoConflicts), "no conflict"))
	}
	return r
}

func readyMessage(r ExportResult, blocked []string) string {
	msg := fmt.Sprintf("%d endpoints exported", r.Endpoints)
	if len(r.LeftOut) > 0 {
		var parts []string
		for _, rc := range r.LeftOut {
			parts = append(parts, fmt.Sprintf("%d %s", rc.Count, rc.Reason))
		}
		msg += "; left out: " + strings.Join(parts, ", ")
	}
	if len(blocked) > 0 {
		msg += "; not imported in " + strings.Join(blocked, ", ")
	}
	return msg
}
