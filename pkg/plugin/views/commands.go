// Package views holds the `kubectl mesh` commands that read the server's
// computed views of a mesh: plan, peers, services, graph, why and status. They never
// compute anything themselves: what they show is what the server's planner
// decided, which is what its reconciler applies.
package views

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// NewPlanCommand is `kubectl mesh plan MESH`.
func NewPlanCommand(o *cli.Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "plan MESH",
		Short: "Show what the server would change on every member cluster, and why",
		Long: `Show the plan of a ClusterMesh as a readable diff: per member cluster what
was observed (granularity, nodes, groups), which Peers are created, updated or
deleted on it, which nodes are left out and why, then the conflicts and warnings.
The server's reconciler applies exactly this plan. -o yaml|json prints the
whole typed plan.`,
		Args:              cli.MeshArgs,
		ValidArgsFunction: o.CompleteMeshes,
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := readPlan(cmd.Context(), o, args[0])
			if err != nil {
				return err
			}
			if output != "" {
				return cli.PrintObject(o.Out, plan, output)
			}
			RenderPlan(cli.Terminal(o.Out), plan)
			return nil
		},
	}
	cli.AddOutputFlag(cmd, &output, "the whole typed plan")
	return cmd
}

func readPlan(ctx context.Context, o *cli.Options, name string) (*meshv1alpha1.ClusterMeshPlan, error) {
	ns, api, err := o.NamespacedMeshes()
	if err != nil {
		return nil, err
	}
	plan, err := api.Plan(ctx, ns, name)
	if err != nil {
		return nil, cli.Explain(err, fmt.Sprintf("clustermesh %s/%s", ns, name))
	}
	return plan, nil
}

// Formats of `kubectl mesh peers`.
const (
	formatYAML = "yaml"
	formatJSON = "json"
)

// NewPeersCommand is `kubectl mesh peers MESH [--cluster X] [--format ...]`.
func NewPeersCommand(o *cli.Options) *cobra.Command {
	var cluster, format string
	cmd := &cobra.Command{
		Use:   "peers MESH [--cluster NAME] [-o yaml|json|wireguard|dot]",
		Short: "Print the Kilo Peers the mesh wants, like kgctl showconf",
		Long: `Print the Kilo Peers the mesh wants on its member clusters. With --cluster,
the Peers of that cluster as a list kubectl apply takes (yaml, json) or as the
[Peer] sections of its WireGuard configuration (wireguard); dot draws the mesh.`,
		Example: `  kubectl mesh peers demo --cluster west
  kubectl mesh peers demo --cluster west -o wireguard
  kubectl mesh peers demo --cluster west | kubectl apply --dry-run=client -f -`,
		Args:              cli.MeshArgs,
		ValidArgsFunction: o.CompleteMeshes,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPeers(cmd.Context(), o, args[0], cluster, format)
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "only the Peers of this member cluster")
	// -o like every command; --format, its first name, stays as an alias.
	for _, name := range []string{"output", "format"} {
		short := ""
		if name == "output" {
			short = "o"
		}
		cmd.Flags().StringVarP(&format, name, short, formatYAML, "yaml, json, wireguard (needs --cluster) or dot")
		_ = cmd.RegisterFlagCompletionFunc(name, cli.FixedCompletion(formatYAML, formatJSON, meshv1alpha1.PeersFormatWireGuard, meshv1alpha1.PeersFormatDOT))
	}
	return cmd
}

func runPeers(ctx context.Context, o *cli.Options, name, cluster, format string) error {
	ns, api, err := o.NamespacedMeshes()
	if err != nil {
		return err
	}
	what := fmt.Sprintf("clustermesh %s/%s", ns, name)
	switch format {
	case formatYAML, formatJSON:
		if cluster == "" {
			peers, err := api.Peers(ctx, ns, name)
			if err != nil {
				return cli.Explain(err, what)
			}
			return cli.PrintObject(o.Out, peers, format)
		}
		// Asked as JSON whatever is printed: the client decodes the
		// server's errors from JSON only, and would otherwise hide their
		// text behind "an unknown reason".
		body, err := api.PeersRaw(ctx, ns, name, cluster, "", "application/json")
		if err != nil {
			return cli.Explain(err, what)
		}
		if format == formatYAML {
			if body, err = yaml.JSONToYAML(body); err != nil {
				return fmt.Errorf("reading the Peers of %s: %w", cluster, err)
			}
		} else {
			var indented bytes.Buffer
			if err := jsonIndent(&indented, body); err != nil {
				return err
			}
			body = indented.Bytes()
		}
		_, err = o.Out.Write(body)
		return err
	case meshv1alpha1.PeersFormatWireGuard:
		if cluster == "" {
			return fmt.Errorf("-o wireguard needs --cluster: a WireGuard configuration belongs to one cluster")
		}
		fallthrough
	case meshv1alpha1.PeersFormatDOT:
		body, err := api.PeersRaw(ctx, ns, name, cluster, format, "")
		if err != nil {
			return cli.Explain(err, what)
		}
		_, err = o.Out.Write(body)
		return err
	default:
		return fmt.Errorf("unknown -o %q: use yaml, json, wireguard or dot", format)
	}
}

// Outputs of `kubectl mesh graph`.
const (
	graphDOT = "dot"
	graphSVG = "svg"
)

// NewGraphCommand is `kubectl mesh graph MESH [-o dot|svg|json|yaml]`.
func NewGraphCommand(o *cli.Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "graph MESH [-o dot|svg|json|yaml]",
		Short: "Draw the mesh as a Graphviz graph, like kgctl graph",
		Long: `Draw the mesh: clusters, their groups and leaders, and the Peers between
them, as Graphviz DOT. -o svg renders it with Graphviz's dot, which must be
installed (Debian: apt-get install graphviz). -o json|yaml prints the data the
graph is drawn from: the mesh's Peers view, as peers -o json|yaml does.`,
		Example:           "  kubectl mesh graph demo -o svg > mesh.svg",
		Args:              cli.MeshArgs,
		ValidArgsFunction: o.CompleteMeshes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var dot string
			switch output {
			case formatJSON, formatYAML:
				return runPeers(cmd.Context(), o, args[0], "", output)
			case graphSVG:
				// Checked first: no point asking the server for a graph
				// that cannot be rendered.
				var err error
				if dot, err = exec.LookPath("dot"); err != nil {
					return fmt.Errorf("-o svg needs Graphviz's dot, which is not in PATH: install Graphviz (Debian: apt-get install graphviz) or use -o dot")
				}
			case graphDOT:
			default:
				return fmt.Errorf("unknown -o %q: use dot, svg, json or yaml", output)
			}
			ns, api, err := o.NamespacedMeshes()
			if err != nil {
				return err
			}
			body, err := api.PeersRaw(cmd.Context(), ns, args[0], "", meshv1alpha1.PeersFormatDOT, "")
			if err != nil {
				return cli.Explain(err, fmt.Sprintf("clustermesh %s/%s", ns, args[0]))
			}
			if output == graphDOT {
				_, err = o.Out.Write(body)
				return err
			}
			render := exec.CommandContext(cmd.Context(), dot, "-Tsvg")
			render.Stdin = bytes.NewReader(body)
			render.Stdout = o.Out
			var stderr bytes.Buffer
			render.Stderr = &stderr
			if err := render.Run(); err != nil {
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					return fmt.Errorf("dot -Tsvg failed: %s", bytes.TrimSpace(stderr.Bytes()))
				}
				return fmt.Errorf("running dot: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", graphDOT, "dot, svg (needs Graphviz's dot), or json|yaml (the Peers view it draws)")
	_ = cmd.RegisterFlagCompletionFunc("output", cli.FixedCompletion(graphDOT, graphSVG, formatJSON, formatYAML))
	return cmd
}

// NewWhyCommand is `kubectl mesh why MESH [node] NODE [--cluster C]`,
// `kubectl mesh why MESH service NAMESPACE/NAME [--cluster C]` and
// `kubectl mesh why MESH pair CLUSTER CLUSTER`.
func NewWhyCommand(o *cli.Options) *cobra.Command {
	var cluster, output string
	cmd := &cobra.Command{
		Use:   "why MESH [node] NODE | why MESH service NAMESPACE/NAME [--cluster NAME] | why MESH pair CLUSTER CLUSTER",
		Short: "Explain the decision about one node, one service or one pair of clusters, and why",
		Long: `Explain what the plan decided about one node: whether its pod CIDRs are
advertised to the other clusters and why, its Kilo group and leader, and what
becomes of the group's Peer on every other member cluster. Node names are
unique within a cluster only: when several clusters have the node, say which
with --cluster.

With service NAMESPACE/NAME (a mesh with spec.multiClusterServices Enabled):
every ServiceExport of the service, whether it is exported, its conflicts and
each reason endpoints were left out, then its import in every cluster, or why
it is blocked there. --cluster limits it to that cluster's export and import.

With pair A B: whether the two clusters reach each other directly or through
the relay cluster (both behind NAT), through which, and why; or why they
have no path.`,
		Example: `  kubectl mesh why demo node-1 --cluster west
  kubectl mesh why demo service shop/cart
  kubectl mesh why demo pair edge-a edge-b`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 || (len(args) == 3 && (args[1] == whyNode || args[1] == whyService)) || (len(args) == 4 && args[1] == whyPair) {
				return nil
			}
			return fmt.Errorf("why takes a ClusterMesh and a node name, %s and NAMESPACE/NAME, or %s and two clusters, e.g. kubectl mesh why demo node-1, kubectl mesh why demo service shop/cart, kubectl mesh why demo pair edge-a edge-b", whyService, whyPair)
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
			switch {
			case len(args) == 0:
				return o.CompleteMeshes(cmd, args, prefix)
			case len(args) == 2 && args[1] == whyService:
				return completeWhyService(o, args[0], cluster, prefix)
			case (len(args) == 2 || len(args) == 3) && args[1] == whyPair:
				return o.CompleteClusters(cmd, args[:1], prefix)
			case len(args) > 2 || (len(args) == 2 && args[1] != whyNode):
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			ctx, cancel := context.WithTimeout(context.Background(), cli.CompletionTimeout)
			defer cancel()
			plan, err := readPlan(ctx, o, args[0])
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			names := nodeNames(plan, cluster, prefix)
			for _, word := range []string{whyService, whyPair} {
				if len(args) == 1 && strings.HasPrefix(word, prefix) {
					names = append(names, word)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 4 {
				return runWhyPair(cmd.Context(), o, args[0], args[2], args[3], output)
			}
			node := args[1]
			if len(args) == 3 {
				if args[1] == whyService {
					return runWhyService(cmd.Context(), o, args[0], args[2], cluster, output)
				}
				node = args[2]
			}
			plan, err := readPlan(cmd.Context(), o, args[0])
			if err != nil {
				return err
			}
			if output != "" {
				data, err := WhyData(plan, node, cluster)
				if err != nil {
					return err
				}
				return cli.PrintData(o.Out, data, output)
			}
			return RenderWhy(cli.Terminal(o.Out), plan, node, cluster)
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "the member cluster of the node, or of the service's export and import")
	_ = cmd.RegisterFlagCompletionFunc("cluster", o.CompleteClusters)
	cli.AddOutputFlag(cmd, &output, "the decision, the group and the fate of its Peer, or the service's exports and imports, as data")
	return cmd
}

func jsonIndent(w *bytes.Buffer, body []byte) error {
	if err := json.Indent(w, body, "", "  "); err != nil {
		return err
	}
	w.WriteByte('\n')
	return nil
}
