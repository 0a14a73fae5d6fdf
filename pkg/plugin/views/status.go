package views

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Ready reports whether the mesh is Ready for its current spec: the Ready
// condition is True and was computed for the mesh's generation, so a status
// left from before a change (a cluster just joined) does not count.
func Ready(m *meshv1alpha1.ClusterMesh) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue &&
		m.Status.ObservedGeneration >= m.Generation && c.ObservedGeneration >= m.Generation
}

// Progress is a one-line summary of how far the mesh is from Ready.
func Progress(m *meshv1alpha1.ClusterMesh) string {
	if m.Status.ObservedGeneration < m.Generation {
		return fmt.Sprintf("generation %d not observed yet (status is of %d)", m.Generation, m.Status.ObservedGeneration)
	}
	var applied, desired, reachable int32
	for _, c := range m.Status.Clusters {
		applied += c.PeersApplied
		desired += c.PeersDesired
		if c.Reachable {
			reachable++
		}
	}
	line := fmt.Sprintf("%d/%d clusters reachable, %d/%d Peers applied", reachable, len(m.Spec.Clusters), applied, desired)
	if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady); c != nil {
		line = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, line)
	} else {
		line = "no status yet: " + line
	}
	return line
}

// RenderStatus writes the mesh's conditions and its figures per cluster.
func RenderStatus(w io.Writer, m *meshv1alpha1.ClusterMesh) {
	fmt.Fprintf(w, "ClusterMesh %s/%s: generation %d, status of generation %d\n\n", m.Namespace, m.Name, m.Generation, m.Status.ObservedGeneration)
	tw := newTable(w)
	fmt.Fprintln(tw, "CONDITION\tSTATUS\tREASON\tSINCE\tMESSAGE")
	for _, typ := range meshv1alpha1.ConditionTypes {
		c := meta.FindStatusCondition(m.Status.Conditions, typ)
		if c == nil {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\n", typ, metav1.ConditionUnknown)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z"), oneLine(c.Message))
	}
	// Conditions other servers or later versions add are shown too.
	for _, c := range m.Status.Conditions {
		if slices.Contains(meshv1alpha1.ConditionTypes, c.Type) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z"), oneLine(c.Message))
	}
	tw.flush()
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "CLUSTER\tREACHABLE\tGRANULARITY\tNODES\tKILO-READY\tGROUPS\tPEERS\tSKIPPED\tLAST ERROR")
	for _, c := range m.Status.Clusters {
		var skipped []string
		for _, r := range c.SkippedByReason {
			skipped = append(skipped, fmt.Sprintf("%s=%d", r.Reason, r.Count))
		}
		skip := fmt.Sprint(c.SkippedNodes)
		if len(skipped) > 0 {
			skip += " (" + strings.Join(skipped, ",") + ")"
		}
		fmt.Fprintf(tw, "%s\t%t\t%s\t%d\t%d\t%d\t%d/%d\t%s\t%s\n", c.Name, c.Reachable, c.Granularity, c.Nodes, c.ReadyNodes,
			c.Locations, c.PeersApplied, c.PeersDesired, skip, oneLine(c.LastError))
	}
	tw.flush()
	// Clusters that left and still hold Peers of the mesh (kubectl mesh leave).
	if len(m.Status.DepartedClusters) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "DEPARTED\tSERVER\tREASON\tSINCE\tMESSAGE")
	for _, d := range m.Status.DepartedClusters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Name, d.Server, d.Reason, d.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z"), oneLine(d.Message))
	}
	tw.flush()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
