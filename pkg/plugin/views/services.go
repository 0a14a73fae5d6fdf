package views

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// NewServicesCommand is `kubectl mesh services MESH [--cluster X]`.
func NewServicesCommand(o *cli.Options) *cobra.Command {
	var cluster, output string
	cmd := &cobra.Command{
		Use:   "services MESH [--cluster NAME]",
		Short: "Show what every member cluster imports, and how every ServiceExport fared",
		Long: `Show the multi-cluster services of a ClusterMesh with
spec.multiClusterServices Enabled: per member cluster the ServiceImports it
holds (type, ports, IPs, source clusters, endpoints, or why one is blocked),
then every ServiceExport's outcome with its stable reasons (conflicts,
endpoints left out). The server's reconciler writes exactly this. With
--cluster, what that cluster imports and exports. -o yaml|json prints the
ClusterMeshServices view.`,
		Example: `  kubectl mesh services demo
  kubectl mesh services demo --cluster west -o yaml
  kubectl mesh why demo service shop/cart`,
		Args:              cli.MeshArgs,
		ValidArgsFunction: o.CompleteMeshes,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := readServices(cmd.Context(), o, args[0], cluster)
			if err != nil {
				return err
			}
			if output != "" {
				return cli.PrintObject(o.Out, v, output)
			}
			RenderServices(cli.Terminal(o.Out), v, cluster)
			return nil
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "only what this member cluster imports and exports")
	_ = cmd.RegisterFlagCompletionFunc("cluster", o.CompleteClusters)
	cli.AddOutputFlag(cmd, &output, "the ClusterMeshServices view")
	return cmd
}

func readServices(ctx context.Context, o *cli.Options, name, cluster string) (*meshv1alpha1.ClusterMeshServices, error) {
	ns, api, err := o.NamespacedMeshes()
	if err != nil {
		return nil, err
	}
	v, err := api.Services(ctx, ns, name, cluster)
	if err != nil {
		return nil, cli.Explain(err, fmt.Sprintf("clustermesh %s/%s", ns, name))
	}
	return v, nil
}

// RenderServices writes what every cluster imports, then every export's
// outcome with its reasons; cluster, if not empty, is the one the view was
// asked for.
func RenderServices(w io.Writer, v *meshv1alpha1.ClusterMeshServices, cluster string) {
	fmt.Fprintf(w, "ClusterMesh %s/%s, services computed at %s\n", v.Namespace, v.Name, v.GeneratedAt.UTC().Format("2006-01-02T15:04:05Z"))
	for _, c := range v.Clusters {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Cluster %s", c.Cluster)
		if !c.Reachable {
			fmt.Fprint(w, " (unreachable: these imports are written once it answers)")
		}
		fmt.Fprintln(w)
		if c.Reason != "" {
			fmt.Fprintf(w, "  its services are not used: %s: %s\n", c.Reason, c.Message)
		}
		if len(c.Imports) == 0 && len(c.HiddenImports) == 0 {
			fmt.Fprintln(w, "  imports nothing")
		}
		for i := range c.Imports {
			fmt.Fprintf(w, "  imports %s\n", importLine(&c.Imports[i]))
		}
		writeHidden(w, "imports", c.HiddenImports)
		writeHidden(w, "exports", c.HiddenExports)
	}
	fmt.Fprintln(w)
	if len(v.Exports) == 0 {
		// Exports counted above without their names are still exports.
		none := "No"
		for _, c := range v.Clusters {
			if len(c.HiddenExports) > 0 {
				none = "No other"
			}
		}
		if cluster != "" {
			fmt.Fprintf(w, "%s ServiceExport in cluster %s.\n", none, cluster)
		} else {
			fmt.Fprintf(w, "%s ServiceExport in any member cluster.\n", none)
		}
		return
	}
	fmt.Fprintln(w, "Exports")
	for i := range v.Exports {
		e := &v.Exports[i]
		fmt.Fprintf(w, "  %s/%s of %s: %s\n", e.Namespace, e.Name, e.Cluster, exportLine(e))
	}
}

// writeHidden says how many imports or exports of a cluster the view
// counts without naming them, and why.
func writeHidden(w io.Writer, what string, hidden []meshv1alpha1.ReasonCount) {
	for _, rc := range hidden {
		fmt.Fprintf(w, "  %d %s not shown: %s\n", rc.Count, what, explain(rc.Reason))
	}
}

// importLine says what one import is in its cluster, or why it is blocked.
func importLine(imp *meshv1alpha1.ImportState) string {
	s := fmt.Sprintf("%s/%s (%s)", imp.Namespace, imp.Name, imp.Type)
	if imp.Blocked != "" {
		return s + ": blocked, " + imp.Blocked + ": " + imp.Message
	}
	if len(imp.IPs) > 0 {
		s += " at " + strings.Join(imp.IPs, ", ")
	} else if imp.Type == "ClusterSetIP" {
		s += " without an IP yet"
	}
	ports := make([]string, 0, len(imp.Ports))
	for _, p := range imp.Ports {
		port := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.Name != "" {
			port = p.Name + ":" + port
		}
		ports = append(ports, port)
	}
	if len(ports) > 0 {
		s += ", ports " + strings.Join(ports, ", ")
	}
	return s + fmt.Sprintf(", %d endpoints from %s", imp.Endpoints, strings.Join(imp.SourceClusters, ", "))
}

// exportLine says how one export fared, with its stable reasons.
func exportLine(e *meshv1alpha1.ExportState) string {
	if e.Valid != reasonValid {
		return "not exported, " + e.Valid
	}
	s := fmt.Sprintf("exported, %d endpoints", e.Endpoints)
	if len(e.LeftOut) > 0 {
		parts := make([]string, 0, len(e.LeftOut))
		for _, rc := range e.LeftOut {
			parts = append(parts, fmt.Sprintf("%d %s", rc.Count, rc.Reason))
		}
		s += "; left out: " + strings.Join(parts, ", ")
	}
	if len(e.Conflicts) > 0 {
		s += "; conflicts: " + strings.Join(e.Conflicts, ", ") + " (the oldest export decides)"
	}
	if e.Stale {
		s += "; the cluster is unreachable: its last known endpoints are kept"
	}
	return s
}
