package views

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// maxSkippedShown bounds the skipped nodes listed per cluster: a cluster of
// thousands of nodes stays readable; `kubectl mesh why` tells about any one.
const maxSkippedShown = 10

// peerSource says which group of which cluster a Peer of the plan represents.
type peerSource struct{ cluster, group string }

// peerSources maps the Peer names of the plan's groups to their sources.
func peerSources(p *meshv1alpha1.ClusterMeshPlan) map[string]peerSource {
	out := map[string]peerSource{}
	for _, c := range p.Clusters {
		for _, g := range c.Groups {
			if g.PeerName != "" {
				out[g.PeerName] = peerSource{c.Name, g.Name}
			}
		}
	}
	return out
}

func (s peerSource) String() string {
	if s.cluster == "" {
		return ""
	}
	return "from " + s.cluster + " " + s.group
}

// RenderPlan writes a plan as a readable diff: per member cluster what was
// observed, which Peers change on it and why nodes are left out; then the
// conflicts and warnings with their reasons.
func RenderPlan(w io.Writer, p *meshv1alpha1.ClusterMeshPlan) {
	fmt.Fprintf(w, "ClusterMesh %s/%s, planned at %s\n", p.Namespace, p.Name, p.GeneratedAt.UTC().Format("2006-01-02T15:04:05Z"))
	sources := peerSources(p)
	var creates, updates, deletes, unknown int
	for _, c := range p.Clusters {
		fmt.Fprintln(w)
		renderSource(w, &c)
		t := findTarget(p, c.Name)
		if t == nil {
			continue
		}
		if t.DiffState == meshv1alpha1.DiffStateUnknown {
			unknown++
			fmt.Fprintf(w, "  Peers on %s: unknown while it is unreachable (%d desired); nothing there is changed\n", c.Name, t.DesiredPeers)
			continue
		}
		creates += len(t.Create)
		updates += len(t.Update)
		deletes += len(t.Delete)
		renderTarget(w, t, sources)
	}
	renderRelay(w, p)
	renderIssues(w, "Conflicts (kept out of the mesh)", p.Conflicts)
	renderIssues(w, "Warnings", p.Warnings)
	fmt.Fprintln(w)
	// "No changes" only when nothing is kept out either: above a list of
	// conflicts it would read as a mesh that carries all it declares.
	if creates+updates+deletes == 0 && unknown == 0 && len(p.Conflicts) == 0 {
		fmt.Fprintln(w, "No changes: every member cluster holds the Peers the plan wants.")
		return
	}
	fmt.Fprintf(w, "%d to create, %d to update, %d to delete", creates, updates, deletes)
	if unknown > 0 {
		fmt.Fprintf(w, "; %d cluster(s) unreachable, their Peers unknown", unknown)
	}
	if len(p.Conflicts) > 0 {
		fmt.Fprintf(w, "; %d conflict(s) keep groups or Peers out of the mesh (listed above)", len(p.Conflicts))
	}
	fmt.Fprintln(w, ".")
}

func findTarget(p *meshv1alpha1.ClusterMeshPlan, cluster string) *meshv1alpha1.TargetPlan {
	for i := range p.Targets {
		if p.Targets[i].Cluster == cluster {
			return &p.Targets[i]
		}
	}
	return nil
}

func findCluster(p *meshv1alpha1.ClusterMeshPlan, cluster string) *meshv1alpha1.ClusterPlan {
	for i := range p.Clusters {
		if p.Clusters[i].Name == cluster {
			return &p.Clusters[i]
		}
	}
	return nil
}

// renderSource writes what was observed of one cluster as a source of Peers.
func renderSource(w io.Writer, c *meshv1alpha1.ClusterPlan) {
	if !c.Reachable {
		msg := "unreachable"
		if c.Error != "" {
			msg += ": " + c.Error
		}
		fmt.Fprintf(w, "%s: %s\n", c.Name, msg)
		return
	}
	s := c.Summary
	fmt.Fprintf(w, "%s: granularity %s (%s), %d nodes (%d Ready in Kilo, %d advertised), %d of %d groups exported\n",
		c.Name, c.Granularity, c.GranularitySource, s.Nodes, s.KiloReadyNodes, s.AdvertisedNodes, s.ReadyGroups, s.Groups)
	for _, g := range c.Groups {
		if !g.Ready {
			fmt.Fprintf(w, "  group %s not exported: %s: %s\n", g.Name, g.Reason, g.Message)
		}
	}
	shown := 0
	for _, n := range c.Nodes {
		if n.Included {
			continue
		}
		if shown == maxSkippedShown {
			var counts []string
			for _, r := range s.SkippedByReason {
				counts = append(counts, fmt.Sprintf("%s %d", r.Reason, r.Count))
			}
			fmt.Fprintf(w, "  ... more skipped nodes (by reason: %s); kubectl mesh why MESH NODE tells about one\n", strings.Join(counts, ", "))
			break
		}
		shown++
		fmt.Fprintf(w, "  skipped %s: %s: %s\n", n.Node, n.Reason, n.Message)
	}
}

// renderTarget writes how the Peers of one target cluster change.
func renderTarget(w io.Writer, t *meshv1alpha1.TargetPlan, sources map[string]peerSource) {
	tw := newTable(w)
	defer tw.flush()
	fmt.Fprintf(tw, "  Peers on %s: %d desired\n", t.Cluster, t.DesiredPeers)
	for _, n := range t.Create {
		fmt.Fprintf(tw, "    + %s\tcreate\t%s\n", n, sources[n])
	}
	for _, u := range t.Update {
		fmt.Fprintf(tw, "    ~ %s\tupdate\t%s\n", u.Name, strings.Join(u.Fields, ", "))
	}
	for _, n := range t.Delete {
		fmt.Fprintf(tw, "    - %s\tdelete\tno longer planned\n", n)
	}
	for _, k := range t.Kept {
		fmt.Fprintf(tw, "    = %s\tkept\t%s (represents %s)\n", k.Name, k.Reason, k.SourceCluster)
	}
	if len(t.Unchanged) > 0 {
		fmt.Fprintf(tw, "    = %d unchanged\n", len(t.Unchanged))
	}
}

func renderIssues(w io.Writer, title string, issues []meshv1alpha1.PlanIssue) {
	if len(issues) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	for _, i := range issues {
		where := i.Cluster
		if i.Target != "" {
			where += " -> " + i.Target
		}
		if where != "" {
			where = " [" + strings.TrimPrefix(where, " ") + "]"
		}
		fmt.Fprintf(w, "  %s%s: %s\n", i.Reason, where, i.Message)
	}
}

// table aligns columns like tabwriter, without the padding that rows whose
// last column is empty would end in.
type table struct {
	*tabwriter.Writer
	buf bytes.Buffer
	out io.Writer
}

func newTable(out io.Writer) *table {
	t := &table{out: out}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 4, 2, ' ', 0)
	return t
}

func (t *table) flush() {
	t.Writer.Flush()
	for _, line := range strings.Split(strings.TrimSuffix(t.buf.String(), "\n"), "\n") {
		fmt.Fprintln(t.out, strings.TrimRight(line, " "))
	}
	t.buf.Reset()
}
