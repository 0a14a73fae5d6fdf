// Command kilo-mesh-apiserver serves the mesh.kilo.squat.ai API through the
// Kubernetes aggregation layer.
package main

import (
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apiserver"
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
	cmd := &cobra.Command{
		Use:   "kilo-mesh-apiserver",
		Short: "Joins Kubernetes clusters running Kilo into one WireGuard mesh",
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		},
	}
	o.AddFlags(cmd.Flags())
	logs.AddFlags(cmd.PersistentFlags())
	return cmd
}
