package plugin

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version"
)

// newVersionCommand is `kubectl mesh version`: the plugin's own version,
// stamped at build time like the server's (pkg/version).
func newVersionCommand(o *cli.Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o yaml|json]",
		Short: "Print the version of kubectl mesh",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := version.Get()
			if output != "" {
				return cli.PrintData(o.Out, v, output)
			}
			_, err := fmt.Fprintf(o.Out, "kubectl-mesh %s (commit %s, built %s, %s, %s)\n", v.Version, v.Commit, v.BuildDate, v.GoVersion, v.Platform)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "yaml or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cli.FixedCompletion(cli.OutputYAML, cli.OutputJSON))
	return cmd
}
