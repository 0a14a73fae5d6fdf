package dns

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/dns/corefile"
)

func newDisableCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "disable [--member-kubeconfig FILE] [--dry-run] [--restart]",
		Short: "Undo what dns enable changed in the cluster's CoreDNS",
		Long: `Undo what kubectl mesh dns enable changed, as recorded in the ConfigMap's
annotation ` + RecordAnnotation + `: remove from the Corefile exactly the
zone, option and cache exceptions it added (what others changed since stays),
delete the ClusterRole and binding it created (not those of the member chart
or kustomize), then let CoreDNS reread the Corefile as enable does. Without
the record it changes nothing. --dry-run prints the diff and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return guard(o.disable(cmd.Context())) },
	}
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print the Corefile's diff and the RBAC objects to delete, change nothing")
	cmd.Flags().BoolVar(&o.Restart, "restart", false, "restart CoreDNS's Deployment even when its reload plugin would reread the Corefile")
	return cmd
}

func (o *Options) disable(ctx context.Context) error {
	c, err := o.connect(ctx)
	if err != nil {
		return err
	}
	in := c.install
	w := cli.Terminal(o.Out)
	cm, src, err := c.corefile(ctx)
	if err != nil {
		return err
	}
	rec, err := readRecord(cm)
	if err != nil {
		return err
	}
	if rec == nil {
		fmt.Fprintf(w, "ConfigMap %s/%s holds no record of kubectl mesh dns enable (annotation %s): nothing to undo.\n", in.Namespace, in.ConfigMap, RecordAnnotation)
		return nil
	}
	after, err := corefile.Disable(src, rec.Corefile)
	var nu *corefile.NotUnderstood
	if errors.As(err, &nu) {
		return fmt.Errorf("the Corefile of ConfigMap %s/%s changed so that this command cannot find what enable added (%s); nothing was changed: remove by hand %s, then the annotation %s",
			in.Namespace, in.ConfigMap, nu.Reason, strings.Join(rec.changes(), ", "), RecordAnnotation)
	}
	if err != nil {
		return err
	}
	// The right goes only when nothing in the Corefile needs it any more:
	// a multicluster option someone else wrote keeps it.
	stillServed, _ := corefile.Enabled(after, corefile.Zone)
	dropRBAC := rec.RBAC && !stillServed
	if o.DryRun {
		if after != src {
			fmt.Fprintf(w, "Would change the Corefile of ConfigMap %s/%s:\n", in.Namespace, in.ConfigMap)
			if err := printDiff(w, in, src, after); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "Would remove the annotation %s.\n", RecordAnnotation)
		if dropRBAC {
			fmt.Fprintf(w, "Would delete ClusterRoleBinding and ClusterRole %s.\n", member.CoreDNSRole)
		}
		fmt.Fprintln(w, "Dry run: nothing was changed.")
		return nil
	}
	// Until the RBAC is gone the record keeps it, so that a failure
	// in between leaves something for a rerun to find.
	var left *record
	if dropRBAC {
		left = &record{Corefile: corefile.Edits{Zone: rec.Corefile.Zone}, RBAC: true, ServiceAccount: rec.ServiceAccount}
	}
	if cm, err = c.writeCorefile(ctx, cm, after, left); err != nil {
		return err
	}
	if after != src {
		fmt.Fprintf(w, "Changed the Corefile of ConfigMap %s/%s back:\n", in.Namespace, in.ConfigMap)
		if err := printDiff(w, in, src, after); err != nil {
			return err
		}
		if err := c.apply(ctx, w, after, o.Restart); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "The Corefile of ConfigMap %s/%s holds nothing enable added any more; removed the record.\n", in.Namespace, in.ConfigMap)
	}
	if stillServed {
		fmt.Fprintf(w, "The Corefile still serves %s with lines enable did not add: they stay, and so does ServiceImports' RBAC.\n", corefile.Zone)
	}
	if !dropRBAC {
		return nil
	}
	deleted, err := deleteRBAC(ctx, c.kube)
	if len(deleted) > 0 {
		fmt.Fprintf(w, "Deleted %s.\n", strings.Join(deleted, " and "))
	}
	if err != nil {
		return err
	}
	_, err = c.writeCorefile(ctx, cm, after, nil)
	return err
}
