package clustermesh

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

var _ rest.TableConvertor = &PlanREST{}

// planColumns: one row per member cluster, what a platform engineer checks
// first (can it be read, how many of its nodes are in, what will change on
// it); -o wide adds who leads its groups and what stands in the way.
var planColumns = []metav1.TableColumnDefinition{
	{Name: "Cluster", Type: "string", Format: "name", Description: "Member cluster (spec.clusters[].name)."},
	{Name: "Reachable", Type: "boolean", Description: "Whether a snapshot of the cluster's nodes and Peers was available."},
	{Name: "Granularity", Type: "string", Description: "Granularity in effect: the spec's, or the one detected from the nodes."},
	{Name: "Advertised", Type: "integer", Description: "Nodes whose pod CIDRs are advertised to the other clusters."},
	{Name: "Skipped", Type: "integer", Description: "Nodes left out of the mesh; the plan says why for each."},
	{Name: "Create", Type: "integer", Description: "Peers to create on the cluster."},
	{Name: "Update", Type: "integer", Description: "Peers on the cluster whose managed fields differ from the plan."},
	{Name: "Delete", Type: "integer", Description: "Peers the mesh manages on the cluster that the plan no longer holds."},
	{Name: "Reached", Type: "string", Description: "Direct when other clusters dial the cluster; BehindNAT when they wait for its tunnels, with the relay to the other clusters behind NAT, or the ones it has no path to."},
	{Name: "Leaders", Type: "string", Priority: 1, Description: "Leaders of the cluster's Kilo groups, the nodes other clusters' Peers point at."},
	{Name: "Conflicts", Type: "integer", Priority: 1, Description: "Conflicts of the plan about the cluster or its Peers."},
	{Name: "Warnings", Type: "integer", Priority: 1, Description: "Warnings of the plan about the cluster or its Peers."},
	{Name: "Top Skip Reason", Type: "string", Priority: 1, Description: "The reason most skipped nodes share, with their number."},
	{Name: "Error", Type: "string", Priority: 1, Description: "Why the cluster could not be read."},
}

// ConvertToTable prints a plan as one row per member cluster.
func (r *PlanREST) ConvertToTable(_ context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	plan, ok := obj.(*meshv1alpha1.ClusterMeshPlan)
	if !ok {
		return nil, fmt.Errorf("the plan view cannot print %T as a table", obj)
	}
	return planTable(plan, wantsObjects(opts)), nil
}

func planTable(plan *meshv1alpha1.ClusterMeshPlan, objects bool) *metav1.Table {
	conflicts, warnings := issuesByCluster(plan.Conflicts), issuesByCluster(plan.Warnings)
	reached := reachedByCluster(plan)
	targets := make(map[string]*meshv1alpha1.TargetPlan, len(plan.Targets))
	for i := range plan.Targets {
		targets[plan.Targets[i].Cluster] = &plan.Targets[i]
	}
	table := &metav1.Table{ColumnDefinitions: planColumns, Rows: make([]metav1.TableRow, 0, len(plan.Clusters))}
	for i := range plan.Clusters {
		c := &plan.Clusters[i]
		tp := targets[c.Name]
		var row runtime.Object = plan
		if objects {
			row = planOfCluster(plan, c, tp)
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  planCells(c, tp, conflicts[c.Name], warnings[c.Name], reached[c.Name]),
			Object: runtime.RawExtension{Object: row},
		})
	}
	return table
}

func planCells(c *meshv1alpha1.ClusterPlan, tp *meshv1alpha1.TargetPlan, conflicts, warnings int, reached string) []interface{} {
	var granularity, advertised, skipped interface{} = cellUnknown, cellUnknown, cellUnknown
	if c.Reachable {
		granularity = string(c.Granularity)
		advertised = int64(c.Summary.AdvertisedNodes)
		var n int32
		for _, r := range c.Summary.SkippedByReason {
			n += r.Count
		}
		skipped = int64(n)
	}
	var create, update, del interface{} = cellUnknown, cellUnknown, cellUnknown
	if tp != nil && tp.DiffState == meshv1alpha1.DiffStateComputed {
		create, update, del = int64(len(tp.Create)), int64(len(tp.Update)), int64(len(tp.Delete))
	}
	leaders := make([]string, 0, len(c.Groups))
	for _, g := range c.Groups {
		leaders = append(leaders, g.Leader)
	}
	errText := c.Error
	if errText == "" {
		errText = cellNone
	}
	return []interface{}{
		c.Name, c.Reachable, granularity, advertised, skipped, create, update, del, reached,
		fewItems(leaders), int64(conflicts), int64(warnings), topSkipReason(c.Summary.SkippedByReason), errText,
	}
}

// topSkipReason names the reason most skipped nodes share; ties go to the
// reason first in the plan's order, which is by name.
func topSkipReason(counts []meshv1alpha1.ReasonCount) string {
	var top *meshv1alpha1.ReasonCount
	for i := range counts {
		if top == nil || counts[i].Count > top.Count {
			top = &counts[i]
		}
	}
	if top == nil {
		return cellNone
	}
	return fmt.Sprintf("%s (%d)", top.Reason, top.Count)
}

// issuesByCluster counts the issues about each cluster, as the source of
// the problem or as the target whose Peers it affects, once per issue.
func issuesByCluster(issues []meshv1alpha1.PlanIssue) map[string]int {
	out := map[string]int{}
	for _, i := range issues {
		if i.Cluster != "" {
			out[i.Cluster]++
		}
		if i.Target != "" && i.Target != i.Cluster {
			out[i.Target]++
		}
	}
	return out
}

// planOfCluster is the plan restricted to one cluster: its source side,
// its target side and the issues about it. It shares the plan's lists.
func planOfCluster(plan *meshv1alpha1.ClusterMeshPlan, c *meshv1alpha1.ClusterPlan, tp *meshv1alpha1.TargetPlan) *meshv1alpha1.ClusterMeshPlan {
	out := &meshv1alpha1.ClusterMeshPlan{
		TypeMeta:    plan.TypeMeta,
		ObjectMeta:  plan.ObjectMeta,
		GeneratedAt: plan.GeneratedAt,
		Clusters:    []meshv1alpha1.ClusterPlan{*c},
	}
	if tp != nil {
		out.Targets = []meshv1alpha1.TargetPlan{*tp}
	}
	about := func(i meshv1alpha1.PlanIssue) bool { return i.Cluster == c.Name || i.Target == c.Name }
	for _, i := range plan.Conflicts {
		if about(i) {
			out.Conflicts = append(out.Conflicts, i)
		}
	}
	for _, i := range plan.Warnings {
		if about(i) {
			out.Warnings = append(out.Warnings, i)
		}
	}
	return out
}

// reachedByCluster says, per cluster, how the others reach it: Direct,
// or BehindNAT with the relay its pairs behind NAT go through and the
// clusters it has no path to.
func reachedByCluster(plan *meshv1alpha1.ClusterMeshPlan) map[string]string {
	via, none := map[string][]string{}, map[string][]string{}
	for _, p := range plan.Paths {
		if len(p.Clusters) != 2 {
			continue
		}
		for i, c := range p.Clusters {
			if p.Kind == meshv1alpha1.PathRelayed {
				via[c] = append(via[c], p.Via)
			} else {
				none[c] = append(none[c], p.Clusters[1-i])
			}
		}
	}
	out := make(map[string]string, len(plan.Clusters))
	for _, c := range plan.Clusters {
		if !c.BehindNAT {
			out[c.Name] = "Direct"
			continue
		}
		s := "BehindNAT"
		if v := slices.Compact(slices.Sorted(slices.Values(via[c.Name]))); len(v) > 0 {
			s += ", relayed via " + strings.Join(v, ",")
		}
		if n := none[c.Name]; len(n) > 0 {
			s += ", no path to " + fewItems(n)
		}
		out[c.Name] = s
	}
	return out
}
