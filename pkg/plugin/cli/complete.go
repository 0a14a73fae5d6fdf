package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// CompletionTimeout bounds the API calls of shell completion: a slow
// cluster must not hang the user's shell.
const CompletionTimeout = 5 * time.Second

// CompleteMeshes completes the first argument with the names of the
// meshes in the namespace.
func (o *Options) CompleteMeshes(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ns, api, err := o.NamespacedMeshes()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ctx, cancel := context.WithTimeout(context.Background(), CompletionTimeout)
	defer cancel()
	list, err := api.List(ctx, ns)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, m := range list.Items {
		if strings.HasPrefix(m.Name, prefix) {
			names = append(names, m.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// CompleteClusters completes a --cluster flag with the member clusters of
// the mesh named by the first argument.
func (o *Options) CompleteClusters(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ns, api, err := o.NamespacedMeshes()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ctx, cancel := context.WithTimeout(context.Background(), CompletionTimeout)
	defer cancel()
	m, err := api.Get(ctx, ns, args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, c := range m.Spec.Clusters {
		if strings.HasPrefix(c.Name, prefix) {
			names = append(names, c.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// FixedCompletion completes a flag with fixed values.
func FixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}
