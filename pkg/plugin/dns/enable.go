package dns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/dns/corefile"
)

func newEnableCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "enable [--member-kubeconfig FILE] [--dry-run] [--restart]",
		Short: "Make the cluster's CoreDNS answer clusterset.local",
		Long: `Make the cluster's CoreDNS answer clusterset.local from ServiceImports:

  1. check that CoreDNS is 1.12.2 or later (read from its Deployment's image)
     and that ServiceImports are served (the mcs-api CRDs);
  2. unless its ServiceAccount may already, let it list and watch
     ServiceImports: the ClusterRole and ClusterRoleBinding
     kilo-mesh:coredns-serviceimports (artifacts/components/coredns, the
     member chart's coredns.rbac.enabled);
  3. in the Corefile's kubernetes plugin, add clusterset.local to its zones
     and "multicluster clusterset.local" to its block; where the cache
     plugin keeps the cluster domain out of its cache, keep clusterset.local
     out too. Nothing else in the Corefile changes. A Corefile this command
     does not understand is left alone, with the lines to add by hand;
  4. record what it changed in the ConfigMap's annotation
     ` + RecordAnnotation + `, for disable;
  5. rely on CoreDNS's reload plugin, or without one (or with --restart)
     restart its Deployment.

Rerunning it changes nothing. --dry-run prints the Corefile's diff and the RBAC
objects, and changes nothing.`,
		Example: `  kubectl mesh dns enable --member-kubeconfig north.yaml --dry-run
  kubectl mesh dns enable --member-kubeconfig north.yaml
  kubectl mesh dns enable --context host-admin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return guard(o.enable(cmd.Context())) },
	}
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print the Corefile's diff and the RBAC objects, change nothing")
	cmd.Flags().BoolVar(&o.Restart, "restart", false, "restart CoreDNS's Deployment even when its reload plugin would reread the Corefile")
	cmd.Flags().BoolVar(&o.SkipVersionCheck, "skip-version-check", false, "go on when the image's tag tells no CoreDNS version (never when it tells one older than 1.12.2)")
	return cmd
}

func (o *Options) enable(ctx context.Context) error {
	c, err := o.connect(ctx)
	if err != nil {
		return err
	}
	in := c.install
	w := cli.Terminal(o.Out)
	if err := in.checkVersion(o.SkipVersionCheck); err != nil {
		return err
	}
	if served, err := c.importsServed(); err != nil {
		return err
	} else if !served {
		return fmt.Errorf("ServiceImports (multicluster.x-k8s.io/v1alpha1, which CoreDNS reads) are not served on %s: install the mcs-api CRDs first (kubectl apply -f artifacts/member/crds, or the kilo-mesh-member chart), then rerun; else CoreDNS would never be ready", c.name)
	}
	cm, src, err := c.corefile(ctx)
	if err != nil {
		return err
	}
	rec, err := readRecord(cm)
	if err != nil {
		return err
	}
	res, err := corefile.Enable(src, corefile.Zone)
	var nu *corefile.NotUnderstood
	if errors.As(err, &nu) {
		return o.leftToUser(w, c, nu)
	}
	if err != nil {
		return err
	}
	allowed, err := canWatchImports(ctx, c.kube, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s on %s: CoreDNS %s.\n", in, c.name, versionText(in))
	for _, n := range res.Notes {
		fmt.Fprintf(w, "Note: %s.\n", n)
	}
	if res.Edits.Empty() && allowed {
		fmt.Fprintf(w, "CoreDNS already answers %s (Corefile of ConfigMap %s/%s, ServiceAccount %s/%s may read ServiceImports): nothing to change.\n",
			corefile.Zone, in.Namespace, in.ConfigMap, in.Namespace, in.ServiceAccount)
		return nil
	}
	if o.DryRun {
		return o.printPlan(w, c, src, res, allowed)
	}
	if rec == nil {
		rec = &record{Corefile: corefile.Edits{Zone: corefile.Zone}}
	}
	// The right first: a CoreDNS that reads the new Corefile without it
	// never becomes ready.
	if !allowed {
		if err := applyRBAC(ctx, c.kube, in); err != nil {
			return err
		}
		fmt.Fprintf(w, "Created ClusterRole and ClusterRoleBinding kilo-mesh:coredns-serviceimports: ServiceAccount %s/%s may list and watch ServiceImports.\n", in.Namespace, in.ServiceAccount)
	}
	rec.merge(res.Edits, !allowed, in.Namespace+"/"+in.ServiceAccount)
	if _, err := c.writeCorefile(ctx, cm, res.Corefile, rec); err != nil {
		return err
	}
	if res.Edits.Empty() {
		fmt.Fprintf(w, "The Corefile already served %s; recorded on ConfigMap %s/%s for disable.\n", corefile.Zone, in.Namespace, in.ConfigMap)
		return nil
	}
	fmt.Fprintf(w, "Changed the Corefile of ConfigMap %s/%s (recorded in its annotation %s, which disable reads):\n", in.Namespace, in.ConfigMap, RecordAnnotation)
	if err := printDiff(w, in, src, res.Corefile); err != nil {
		return err
	}
	return c.apply(ctx, w, res.Corefile, o.Restart)
}

// printPlan is --dry-run: what enable would write.
func (o *Options) printPlan(w io.Writer, c *cluster, src string, res corefile.Result, allowed bool) error {
	in := c.install
	if !allowed {
		fmt.Fprintf(w, "Would create (ServiceAccount %s/%s may not list and watch ServiceImports yet):\n", in.Namespace, in.ServiceAccount)
		m, err := rbacManifest(in)
		if err != nil {
			return err
		}
		if _, err := w.Write(m); err != nil {
			return err
		}
	}
	if res.Edits.Empty() {
		fmt.Fprintln(w, "Would leave the Corefile as it is: it already serves", corefile.Zone)
		return nil
	}
	fmt.Fprintf(w, "Would change the Corefile of ConfigMap %s/%s:\n", in.Namespace, in.ConfigMap)
	if err := printDiff(w, in, src, res.Corefile); err != nil {
		return err
	}
	if !o.Restart && corefile.Reloads(res.Corefile, corefile.Zone) {
		fmt.Fprintln(w, "CoreDNS would reread it by itself (its reload plugin).")
	} else {
		fmt.Fprintf(w, "Would restart Deployment %s/%s.\n", in.Namespace, in.Deployment)
	}
	fmt.Fprintln(w, "Dry run: nothing was changed.")
	return nil
}

// leftToUser explains a Corefile enable does not edit and changes nothing.
func (o *Options) leftToUser(w io.Writer, c *cluster, nu *corefile.NotUnderstood) error {
	in := c.install
	m, err := rbacManifest(in)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Left the Corefile of ConfigMap %s/%s and the cluster's RBAC as they are: %s.\n\n%s\n\nand let ServiceAccount %s/%s list and watch ServiceImports (kubectl apply -f -):\n%s",
		in.Namespace, in.ConfigMap, nu.Reason, corefile.Lines(corefile.Zone), in.Namespace, in.ServiceAccount, m)
	return fmt.Errorf("the Corefile of ConfigMap %s/%s is left to you: %s", in.Namespace, in.ConfigMap, nu.Reason)
}

func versionText(in *install) string {
	if !in.VersionOK {
		return "of a version its image's tag does not tell"
	}
	return strings.TrimSpace(in.Version.String() + ", which has the multicluster option")
}
