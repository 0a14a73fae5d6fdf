package plugin

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version"
)

// versions is what `kubectl mesh version -o json|yaml` prints.
type versions struct {
	ClientVersion version.Info `json:"clientVersion"`
	// ServerVersion is absent when the server's version is unknown; the
	// command then fails, saying why.
	ServerVersion *serverVersion `json:"serverVersion,omitempty"`
}

type serverVersion struct {
	Version string `json:"version"`
}

// newVersionCommand is `kubectl mesh version`: the plugin's own version,
// stamped at build time like the server's (pkg/version), and the server's.
func newVersionCommand(o *cli.Options) *cobra.Command {
	var output string
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version [--client] [-o yaml|json]",
		Short: "Print the versions of kubectl mesh and of the mesh server",
		Long: `Print the version of kubectl mesh and that of kilo-mesh-apiserver behind the
host cluster's aggregation layer, which sends it in the ` + version.Header + `
header of the mesh API's discovery document (readable by every authenticated
user). When the server's version is unknown (server unreachable, older server),
the client's is printed and the command exits 1 saying why.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versions{ClientVersion: version.Get()}
			var serverErr error
			if !clientOnly {
				serverErr = readServerVersion(cmd, o, &v)
			}
			if output != "" {
				if err := cli.PrintData(o.Out, v, output); err != nil {
					return err
				}
			} else {
				c := v.ClientVersion
				fmt.Fprintf(o.Out, "kubectl-mesh %s (commit %s, built %s, %s, %s)\n", c.Version, c.Commit, c.BuildDate, c.GoVersion, c.Platform)
				if v.ServerVersion != nil {
					fmt.Fprintf(o.Out, "kilo-mesh-apiserver %s\n", v.ServerVersion.Version)
				}
			}
			return serverErr
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the client's version only, without asking the server")
	cli.AddOutputFlag(cmd, &output, "both versions")
	return cmd
}

// readServerVersion fills in the server's version, or says why it is unknown.
func readServerVersion(cmd *cobra.Command, o *cli.Options, v *versions) error {
	cfg, err := o.RESTConfig()
	if err == nil {
		var s string
		if s, err = cli.ServerVersion(cmd.Context(), cfg); err == nil {
			v.ServerVersion = &serverVersion{Version: s}
			return nil
		}
	}
	return fmt.Errorf("the version of kilo-mesh-apiserver is unknown: %w", err)
}
