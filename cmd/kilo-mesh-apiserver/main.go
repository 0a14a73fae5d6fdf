// Command kilo-mesh-apiserver serves the mesh.kilo.squat.ai API through the
// Kubernetes aggregation layer.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apiserver"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version"
)

func main() {
	cmd := newCommand()
	cmd.SetContext(genericapiserver.SetupSignalContext())
	os.Exit(cli.Run(cmd))
}

// newCommand is the server's command with every flag it takes, the logging
// flags included (cli.Run would add them too; adding them is idempotent),
// so that docs/reference.md can be checked against the real flag set.
func newCommand() *cobra.Command {
	o := apiserver.NewOptions()
	var printVersion bool
	cmd := &cobra.Command{
		Use:   "kilo-mesh-apiserver",
		Short: "Joins Kubernetes clusters running Kilo into one WireGuard mesh",
		// Everything is a flag: a stray word (`kilo-mesh-apiserver version`)
		// must not start a server and create its data directory.
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("kilo-mesh-apiserver takes no arguments, got %q (for the version, use --version)", args)
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if printVersion {
				fmt.Fprintln(c.OutOrStdout(), version.Get())
				return nil
			}
			klog.InfoS("Starting kilo-mesh-apiserver", "version", version.Get().Version, "commit", version.Get().Commit)
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		},
	}
	// The one subcommand family; no generated completion command.
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.AddCommand(newSnapshotCommand())
	cmd.Flags().BoolVar(&printVersion, "version", false, "Print the version of kilo-mesh-apiserver and exit.")
	o.AddFlags(cmd.Flags())
	logs.AddFlags(cmd.PersistentFlags())
	return cmd
}
