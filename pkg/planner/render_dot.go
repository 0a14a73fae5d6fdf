package planner

import (
	"bytes"
	"fmt"
	"strings"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// maxDrawnTunnels bounds the group-to-group edges drawn between two
// clusters; beyond it one edge between the clusters stands for them all,
// since a full mesh of thousands of nodes is unreadable and huge.
const maxDrawnTunnels = 400

// RenderDOT renders the mesh as a Graphviz graph: every member cluster a
// subgraph (dashed when unreachable), every group a node naming its leader
// (grey and dotted when not exported, bold when it relays), an edge for
// every tunnel between exported groups of different clusters, and for two
// clusters behind NAT one dashed edge naming the relay, or a red one when
// they have no path.
func RenderDOT(p *Plan) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "graph %s {\n", dotID("clustermesh "+p.View.Namespace+"/"+p.View.Name))
	b.WriteString("\tcompound=true;\n\tnode [shape=box, style=rounded, fontname=\"Helvetica\"];\n\tedge [color=\"#4a6fa5\"];\n")

	// anchors[c] is a node inside cluster c that summary edges attach to;
	// ready[c] are the cluster's exported groups.
	anchors := make([]string, len(p.View.Clusters))
	ready := make([][]string, len(p.View.Clusters))
	for ci, c := range p.View.Clusters {
		fmt.Fprintf(&b, "\tsubgraph %s {\n", dotID("cluster_"+c.Name))
		label := c.Name
		if c.BehindNAT {
			label += ", behind NAT"
		}
		if c.Reachable {
			label += fmt.Sprintf(" (%s, %d/%d nodes advertised)", strings.ToLower(string(c.Granularity)), c.Summary.AdvertisedNodes, c.Summary.Nodes)
		} else {
			label += " (unreachable)"
			b.WriteString("\t\tstyle=dashed;\n")
		}
		fmt.Fprintf(&b, "\t\tlabel=%s;\n", dotID(label))
		if !c.Reachable {
			id := dotID(c.Name + "/unreachable")
			fmt.Fprintf(&b, "\t\t%s [label=%s, style=dashed];\n", id, dotID("its Peers are kept as they are\n"+c.Error))
			anchors[ci] = id
		}
		for _, g := range p.Groups[c.Name].All() {
			id := dotID(c.Name + "/" + g.Name)
			lines := []string{g.Name, "leader " + g.Leader, plural(len(g.Members), "member")}
			if g.WireguardIP != "" {
				lines = append(lines, g.WireguardIP)
			}
			if g.Endpoint != "" {
				lines = append(lines, g.Endpoint)
			}
			attrs := ""
			if r := p.View.Relay; r != nil && r.Cluster == c.Name && r.Group == g.Name {
				lines = append(lines, "relays between the clusters behind NAT")
				attrs = ", penwidth=2"
			}
			if !g.Ready {
				lines = append(lines, "not exported: "+g.Reason)
				attrs = `, color=grey, fontcolor=grey, style="rounded,dotted"`
			} else {
				ready[ci] = append(ready[ci], id)
			}
			fmt.Fprintf(&b, "\t\t%s [label=%s%s];\n", id, dotID(strings.Join(lines, "\n")), attrs)
			if anchors[ci] == "" {
				anchors[ci] = id
			}
		}
		if anchors[ci] == "" {
			anchors[ci] = dotID(c.Name + "/empty")
			fmt.Fprintf(&b, "\t\t%s [label=\"no groups\", style=dotted];\n", anchors[ci])
		}
		b.WriteString("\t}\n")
	}

	paths := map[[2]string]*meshv1alpha1.PathPlan{}
	for i := range p.View.Paths {
		if pp := &p.View.Paths[i]; len(pp.Clusters) == 2 {
			paths[[2]string{pp.Clusters[0], pp.Clusters[1]}] = pp
		}
	}
	for a := range p.View.Clusters {
		for c := a + 1; c < len(p.View.Clusters); c++ {
			ca, cc := &p.View.Clusters[a], &p.View.Clusters[c]
			if pp := paths[[2]string{ca.Name, cc.Name}]; pp != nil {
				writePathEdge(&b, ca, cc, anchors[a], anchors[c], pp)
				continue
			}
			if !ca.Reachable || !cc.Reachable || len(ready[a])*len(ready[c]) > maxDrawnTunnels {
				writeSummaryEdge(&b, ca, cc, anchors[a], anchors[c], len(ready[a]), len(ready[c]))
				continue
			}
			for _, ga := range ready[a] {
				for _, gc := range ready[c] {
					fmt.Fprintf(&b, "\t%s -- %s;\n", ga, gc)
				}
			}
		}
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func writeSummaryEdge(b *bytes.Buffer, a, c *meshv1alpha1.ClusterPlan, anchorA, anchorC string, na, nc int) {
	label, style := fmt.Sprintf("%d x %d tunnels", na, nc), "bold"
	if !a.Reachable || !c.Reachable {
		label, style = "kept Peers", "dashed"
	}
	fmt.Fprintf(b, "\t%s -- %s [ltail=%s, lhead=%s, label=%s, style=%s];\n",
		anchorA, anchorC, dotID("cluster_"+a.Name), dotID("cluster_"+c.Name), dotID(label), style)
}

// writePathEdge draws how two clusters behind NAT reach each other: through
// the relay, or not at all.
func writePathEdge(b *bytes.Buffer, a, c *meshv1alpha1.ClusterPlan, anchorA, anchorC string, pp *meshv1alpha1.PathPlan) {
	label, attrs := "relayed via "+pp.Via, `style=dashed, color="#a5744a"`
	if pp.Kind != meshv1alpha1.PathRelayed {
		label, attrs = "no path: both behind NAT, no relay", "style=dotted, color=red, fontcolor=red"
	}
	fmt.Fprintf(b, "\t%s -- %s [ltail=%s, lhead=%s, label=%s, %s];\n",
		anchorA, anchorC, dotID("cluster_"+a.Name), dotID("cluster_"+c.Name), dotID(label), attrs)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// dotID quotes s as a DOT string; a newline becomes a centred line break.
func dotID(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}
