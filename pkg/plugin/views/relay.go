package views

import (
	"context"
	"fmt"
	"io"
	"slices"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// whyPair is the word of `kubectl mesh why MESH pair A B`.
const whyPair = "pair"

// renderRelay writes the relay of a plan and every pair that is not
// direct; nothing when no two clusters are behind NAT.
func renderRelay(w io.Writer, p *meshv1alpha1.ClusterMeshPlan) {
	r := p.Relay
	if r == nil {
		return
	}
	fmt.Fprintln(w)
	if r.Cluster != "" {
		fmt.Fprintf(w, "Relay %s (%s), group %s, Peer %s\n", r.Cluster, r.Basis, r.Group, r.PeerName)
	} else {
		fmt.Fprintf(w, "Relay: none (%s)\n", r.Basis)
	}
	fmt.Fprintf(w, "  %s\n", r.Message)
	for _, x := range r.Refused {
		fmt.Fprintf(w, "  not %s: %s: %s\n", x.Cluster, x.Reason, x.Message)
	}
	for _, pp := range p.Paths {
		fmt.Fprintf(w, "  %s\n", pathLine(&pp))
	}
}

func pathLine(pp *meshv1alpha1.PathPlan) string {
	if pp.Kind == meshv1alpha1.PathRelayed {
		return fmt.Sprintf("%s <-> %s: relayed via %s (%s)", pp.Clusters[0], pp.Clusters[1], pp.Via, pp.Reason)
	}
	return fmt.Sprintf("%s <-> %s: no path (%s): %s", pp.Clusters[0], pp.Clusters[1], pp.Reason, pp.Message)
}

// pairData is what `why MESH pair A B -o yaml|json` prints.
type pairData struct {
	Clusters []string                `json:"clusters"`
	Kind     meshv1alpha1.PathKind   `json:"kind"`
	Via      string                  `json:"via,omitempty"`
	Reason   string                  `json:"reason"`
	Message  string                  `json:"message"`
	Relay    *meshv1alpha1.RelayPlan `json:"relay,omitempty"`
	Behind   []string                `json:"behindNAT,omitempty"`
}

// WhyPairData says how two member clusters reach each other, and why.
func WhyPairData(p *meshv1alpha1.ClusterMeshPlan, a, b string) (*pairData, error) {
	ca, cb := findCluster(p, a), findCluster(p, b)
	for _, c := range []struct {
		name string
		plan *meshv1alpha1.ClusterPlan
	}{{a, ca}, {b, cb}} {
		if c.plan == nil {
			return nil, fmt.Errorf("cluster %q is not a member of clustermesh %s/%s", c.name, p.Namespace, p.Name)
		}
	}
	if a == b {
		return nil, fmt.Errorf("a pair needs two clusters, not %s twice", a)
	}
	pair := []string{a, b}
	slices.Sort(pair)
	out := &pairData{Clusters: pair, Relay: p.Relay}
	for _, c := range []*meshv1alpha1.ClusterPlan{ca, cb} {
		if c.BehindNAT {
			out.Behind = append(out.Behind, c.Name)
		}
	}
	if pp := pathOf(p, a, b); pp != nil {
		out.Kind, out.Via, out.Reason, out.Message = pp.Kind, pp.Via, pp.Reason, pp.Message
		return out, nil
	}
	out.Kind, out.Relay = meshv1alpha1.PathDirect, nil
	switch len(out.Behind) {
	case 0:
		out.Reason, out.Message = "BothDialable", "each can be dialled: each holds Peers of the other with endpoints"
	default:
		nat, open := out.Behind[0], pair[0]
		if open == nat {
			open = pair[1]
		}
		out.Reason = "OneDialable"
		out.Message = fmt.Sprintf("%s is behind NAT and dials %s; %s holds the Peers of %s without endpoint and learns where it is from its keepalives", nat, open, open, nat)
	}
	return out, nil
}

// RenderWhyPair explains how two member clusters reach each other.
func RenderWhyPair(w io.Writer, p *meshv1alpha1.ClusterMeshPlan, a, b string) error {
	d, err := WhyPairData(p, a, b)
	if err != nil {
		return err
	}
	switch d.Kind {
	case meshv1alpha1.PathRelayed:
		fmt.Fprintf(w, "%s and %s: relayed via %s (%s)\n  %s\n", d.Clusters[0], d.Clusters[1], d.Via, d.Reason, d.Message)
		fmt.Fprintf(w, "  relay: %s\n", d.Relay.Message)
	case meshv1alpha1.PathNone:
		fmt.Fprintf(w, "%s and %s: no path (%s)\n  %s\n", d.Clusters[0], d.Clusters[1], d.Reason, d.Message)
		for _, x := range d.Relay.Refused {
			fmt.Fprintf(w, "  %s cannot relay: %s: %s\n", x.Cluster, x.Reason, x.Message)
		}
	default:
		fmt.Fprintf(w, "%s and %s: direct (%s)\n  %s\n", d.Clusters[0], d.Clusters[1], d.Reason, d.Message)
	}
	return nil
}

// pathOf is the path of two clusters that do not reach each other
// directly, nil for a direct pair.
func pathOf(p *meshv1alpha1.ClusterMeshPlan, a, b string) *meshv1alpha1.PathPlan {
	pair := []string{a, b}
	slices.Sort(pair)
	for i := range p.Paths {
		if slices.Equal(p.Paths[i].Clusters, pair) {
			return &p.Paths[i]
		}
	}
	return nil
}

// runWhyPair is `kubectl mesh why MESH pair A B`.
func runWhyPair(ctx context.Context, o *cli.Options, mesh, a, b, output string) error {
	plan, err := readPlan(ctx, o, mesh)
	if err != nil {
		return err
	}
	if output != "" {
		data, err := WhyPairData(plan, a, b)
		if err != nil {
			return err
		}
		return cli.PrintData(o.Out, data, output)
	}
	return RenderWhyPair(cli.Terminal(o.Out), plan, a, b)
}
