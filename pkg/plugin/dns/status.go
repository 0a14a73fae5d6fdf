package dns

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/dns/corefile"
)

func newStatusCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "status [--member-kubeconfig FILE]",
		Short: "Tell whether the cluster's CoreDNS is configured to answer clusterset.local, and what is missing",
		Long: `Tell, from the cluster's API, whether its CoreDNS is configured to answer
clusterset.local: its version, whether ServiceImports are served, whether its
ServiceAccount may list and watch them, whether the Corefile's kubernetes
plugin serves the zone with the multicluster option, and what dns enable
recorded. A CoreDNS that reloads reads a new Corefile within about two minutes.

Exit codes: 0 configured; 2 not (the lines say what is missing); 1 any other
error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return guard(o.status(cmd.Context())) },
	}
}

func (o *Options) status(ctx context.Context) error {
	c, err := o.connect(ctx)
	if err != nil {
		return err
	}
	in := c.install
	w := cli.Terminal(o.Out)
	var missing []string
	fmt.Fprintf(w, "%s on %s\n", in, c.name)
	switch err := in.checkVersion(false); {
	case err == nil:
		fmt.Fprintf(w, "  version:        %s (%s or later has the multicluster option)\n", in.Version, MinVersion)
	case in.VersionOK:
		fmt.Fprintf(w, "  version:        %s, older than %s: it cannot answer %s\n", in.Version, MinVersion, corefile.Zone)
		missing = append(missing, "CoreDNS "+MinVersion.String()+" or later")
	default:
		fmt.Fprintf(w, "  version:        not told by the image's tag\n")
	}
	served, err := c.importsServed()
	if err != nil {
		return err
	}
	if served {
		fmt.Fprintf(w, "  ServiceImports: served (multicluster.x-k8s.io/v1alpha1)\n")
	} else {
		fmt.Fprintf(w, "  ServiceImports: not served: the mcs-api CRDs are missing\n")
		missing = append(missing, "the mcs-api CRDs")
	}
	allowed, err := canWatchImports(ctx, c.kube, in)
	if err != nil {
		return err
	}
	if allowed {
		fmt.Fprintf(w, "  RBAC:           ServiceAccount %s/%s may list and watch ServiceImports\n", in.Namespace, in.ServiceAccount)
	} else {
		fmt.Fprintf(w, "  RBAC:           ServiceAccount %s/%s may not list and watch ServiceImports\n", in.Namespace, in.ServiceAccount)
		missing = append(missing, "the RBAC for ServiceImports")
	}
	cm, src, err := c.corefile(ctx)
	if err != nil {
		return err
	}
	on, err := corefile.Enabled(src, corefile.Zone)
	var nu *corefile.NotUnderstood
	switch {
	case errors.As(err, &nu):
		fmt.Fprintf(w, "  Corefile:       ConfigMap %s/%s key %s, not one this command reads: %s\n", in.Namespace, in.ConfigMap, in.Key, nu.Reason)
		missing = append(missing, "a Corefile this command reads")
	case err != nil:
		return err
	case on:
		fmt.Fprintf(w, "  Corefile:       ConfigMap %s/%s key %s: the kubernetes plugin serves %s with the multicluster option\n", in.Namespace, in.ConfigMap, in.Key, corefile.Zone)
	default:
		fmt.Fprintf(w, "  Corefile:       ConfigMap %s/%s key %s: the kubernetes plugin does not serve %s with the multicluster option\n", in.Namespace, in.ConfigMap, in.Key, corefile.Zone)
		missing = append(missing, "the Corefile's multicluster option")
	}
	rec, err := readRecord(cm)
	if err != nil {
		return err
	}
	if rec != nil && !rec.empty() {
		fmt.Fprintf(w, "  changed by dns enable: %s\n", strings.Join(rec.changes(), "; "))
	}
	if len(missing) == 0 {
		fmt.Fprintf(w, "CoreDNS is configured to answer %s.\n", corefile.Zone)
		return nil
	}
	return cli.WithExitCode(cli.ExitNotReady, fmt.Errorf("CoreDNS is not configured to answer %s: missing %s (kubectl mesh dns enable adds what it can)", corefile.Zone, strings.Join(missing, ", ")))
}
