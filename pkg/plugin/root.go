// Package plugin is `kubectl mesh`: the kubectl plugin of kilo-mesh-apiserver.
// It joins member clusters, reads the server's views of a mesh and moves
// meshes of the predecessor operator over. cmd/kubectl-mesh only runs it.
package plugin

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/dns"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/join"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/migrate"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/views"
)

// NewCommand returns the root command of the plugin.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := cli.NewOptions(streams)
	root := &cobra.Command{
		// kubectl runs kubectl-mesh for `kubectl mesh`; help shows the
		// command as users type it.
		Use:         "kubectl-mesh",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl mesh"},
		Short:       "Join Kubernetes clusters running Kilo into one WireGuard mesh, and see why",
		Long: `kubectl mesh works with the ClusterMeshes of kilo-mesh-apiserver
(mesh.kilo.squat.ai/v1alpha1) on the host cluster the kubeconfig flags select:
it joins member clusters, shows what the server plans and why, configures a
cluster's CoreDNS for the clusterset.local names of multi-cluster services,
and moves meshes of the predecessor kilo-clustermesh-operator over.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.Config.AddFlags(root.PersistentFlags())
	root.AddCommand(
		join.NewCommand(o),
		join.NewLeaveCommand(o),
		views.NewPlanCommand(o),
		views.NewPeersCommand(o),
		views.NewServicesCommand(o),
		views.NewGraphCommand(o),
		views.NewWhyCommand(o),
		views.NewStatusCommand(o),
		dns.NewCommand(o),
		migrate.NewImportCommand(o),
		newVersionCommand(o),
	)
	return root
}
