package views

import (
	"fmt"
	"io"
	"slices"
	"strings"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// nodeMatch is one node of the plan.
type nodeMatch struct {
	cluster  *meshv1alpha1.ClusterPlan
	decision *meshv1alpha1.NodeDecision
}

// findNode finds node in the plan's clusters (only in cluster, if given).
// Node names are unique within a cluster, not across clusters: more than
// one match without a cluster is an error that names the clusters.
func findNode(p *meshv1alpha1.ClusterMeshPlan, node, cluster string) (nodeMatch, error) {
	var matches []nodeMatch
	var unreachable []string
	for i := range p.Clusters {
		c := &p.Clusters[i]
		if cluster != "" && c.Name != cluster {
			continue
		}
		if !c.Reachable {
			unreachable = append(unreachable, c.Name)
		}
		for j := range c.Nodes {
			if c.Nodes[j].Node == node {
				matches = append(matches, nodeMatch{c, &c.Nodes[j]})
			}
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) > 1:
		var names []string
		for _, m := range matches {
			names = append(names, m.cluster.Name)
		}
		return nodeMatch{}, fmt.Errorf("node %s is ambiguous: clusters %s each have a node of that name; say which with --cluster", node, strings.Join(names, ", "))
	case cluster != "" && findCluster(p, cluster) == nil:
		return nodeMatch{}, fmt.Errorf("cluster %q is not a member of clustermesh %s/%s", cluster, p.Namespace, p.Name)
	}
	msg := fmt.Sprintf("no node %s", node)
	if cluster != "" {
		msg += " in cluster " + cluster
	} else {
		msg += " in any member cluster"
	}
	if len(unreachable) > 0 {
		msg += fmt.Sprintf(" (unreachable, so unknown: %s)", strings.Join(unreachable, ", "))
	}
	return nodeMatch{}, fmt.Errorf("%s", msg)
}

// RenderWhy explains the decision about one node: whether its addresses are
// advertised and why, its group and leader, and what becomes of the group's
// Peer on every other cluster.
func RenderWhy(w io.Writer, p *meshv1alpha1.ClusterMeshPlan, node, cluster string) error {
	m, err := findNode(p, node, cluster)
	if err != nil {
		return err
	}
	d, c := m.decision, m.cluster
	verdict := "advertised"
	if !d.Included {
		verdict = "skipped"
	}
	fmt.Fprintf(w, "Node %s of cluster %s: %s (%s)\n", d.Node, c.Name, verdict, d.Reason)
	if d.Message != "" {
		fmt.Fprintf(w, "  %s\n", d.Message)
	}
	for _, n := range d.Notes {
		fmt.Fprintf(w, "  note %s: %s\n", n.Reason, n.Message)
	}
	if d.Group == "" {
		fmt.Fprintf(w, "Group: none: Kilo itself does not count the node, so no Peer represents it.\n")
		return nil
	}
	gi := slices.IndexFunc(c.Groups, func(g meshv1alpha1.GroupPlan) bool { return g.Name == d.Group })
	if gi < 0 {
		fmt.Fprintf(w, "Group %s (role %s)\n", d.Group, d.Role)
		return nil
	}
	g := &c.Groups[gi]
	fmt.Fprintf(w, "Group %s (granularity %s): this node is its %s; leader %s; members %s\n",
		g.Name, c.Granularity, strings.ToLower(string(d.Role)), g.Leader, strings.Join(g.Members, ", "))
	if !g.Ready {
		fmt.Fprintf(w, "  the group is not exported: %s: %s\n", g.Reason, g.Message)
		return nil
	}
	endpoint := g.Endpoint
	if endpoint == "" {
		endpoint = "none (roaming)"
	}
	fmt.Fprintf(w, "  exported as Peer %s: endpoint %s, WireGuard IP %s, keepalive %ds\n", g.PeerName, endpoint, g.WireguardIP, g.PersistentKeepalive)
	if c.ExtraNetworksGroup == g.Name {
		fmt.Fprintf(w, "  it also carries the service and additional networks of %s\n", c.Name)
	}
	for _, t := range p.Targets {
		if t.Cluster == c.Name {
			continue
		}
		fmt.Fprintf(w, "  on %s: %s\n", t.Cluster, peerFate(p, &t, c.Name, g))
	}
	return nil
}

// whyData is what `why -o yaml|json` prints: the plan's decision on the
// node, its group, and the fate of the group's Peer on every other cluster.
type whyData struct {
	Cluster  string                    `json:"cluster"`
	Decision meshv1alpha1.NodeDecision `json:"decision"`
	Group    *meshv1alpha1.GroupPlan   `json:"group,omitempty"`
	// Peers says, per other cluster, what becomes of the group's Peer.
	Peers []peerFateData `json:"peers,omitempty"`
}

type peerFateData struct {
	Cluster string `json:"cluster"`
	Fate    string `json:"fate"`
}

// WhyData is the decision about one node as data, for -o yaml|json.
func WhyData(p *meshv1alpha1.ClusterMeshPlan, node, cluster string) (any, error) {
	m, err := findNode(p, node, cluster)
	if err != nil {
		return nil, err
	}
	out := whyData{Cluster: m.cluster.Name, Decision: *m.decision}
	gi := slices.IndexFunc(m.cluster.Groups, func(g meshv1alpha1.GroupPlan) bool { return g.Name == m.decision.Group })
	if m.decision.Group == "" || gi < 0 {
		return out, nil
	}
	g := &m.cluster.Groups[gi]
	out.Group = g
	if !g.Ready {
		return out, nil
	}
	for _, t := range p.Targets {
		if t.Cluster != m.cluster.Name {
			out.Peers = append(out.Peers, peerFateData{Cluster: t.Cluster, Fate: peerFate(p, &t, m.cluster.Name, g)})
		}
	}
	return out, nil
}

// nodeNames are the names of the plan's nodes (of cluster, if given)
// starting with prefix, for completion.
func nodeNames(p *meshv1alpha1.ClusterMeshPlan, cluster, prefix string) []string {
	var out []string
	for _, c := range p.Clusters {
		if cluster != "" && c.Name != cluster {
			continue
		}
		for _, n := range c.Nodes {
			if strings.HasPrefix(n.Node, prefix) {
				out = append(out, n.Node)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// peerFate says what the plan does with a group's Peer on one target.
func peerFate(p *meshv1alpha1.ClusterMeshPlan, t *meshv1alpha1.TargetPlan, source string, g *meshv1alpha1.GroupPlan) string {
	name := g.PeerName
	switch {
	case t.DiffState == meshv1alpha1.DiffStateUnknown:
		return "unknown: the cluster is unreachable"
	case slices.Contains(t.Create, name):
		return "to be created"
	case slices.Contains(t.Unchanged, name):
		return "in place, as planned"
	}
	for _, u := range t.Update {
		if u.Name == name {
			return "to be updated: " + strings.Join(u.Fields, ", ")
		}
	}
	for _, k := range t.Kept {
		if k.Name == name {
			return "kept as it is: " + k.Reason
		}
	}
	if pp := pathOf(p, source, t.Cluster); pp != nil {
		if pp.Kind == meshv1alpha1.PathRelayed {
			return fmt.Sprintf("not held: both clusters are behind NAT; relayed via %s, whose Peer there carries the networks of %s", pp.Via, source)
		}
		return "not held: no path: " + pp.Message
	}
	// Not planned there: the conflicts about this source and target say why.
	var why []string
	for _, i := range p.Conflicts {
		if i.Cluster == source && i.Target == t.Cluster && (strings.Contains(i.Message, g.Name) || strings.Contains(i.Message, name)) {
			why = append(why, i.Reason+": "+i.Message)
		}
	}
	if len(why) == 0 {
		return "not planned"
	}
	return "not planned: " + strings.Join(why, "; ")
}
