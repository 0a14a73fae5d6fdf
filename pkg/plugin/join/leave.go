package join

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// DefaultLeaveTimeout is how long leave waits for the server to remove
// what the mesh wrote.
const DefaultLeaveTimeout = 5 * time.Minute

// LeaveOptions of `kubectl mesh leave`.
type LeaveOptions struct {
	*cli.Options

	Mesh string
	Name string
	// MemberKubeconfig and MemberContext reach the departing cluster with
	// the caller's credentials, to delete the member identity there.
	MemberKubeconfig string
	MemberContext    string
	DryRun           bool
	KeepIdentity     bool
	Timeout          time.Duration
}

// NewLeaveCommand is `kubectl mesh leave MESH --name NAME`.
func NewLeaveCommand(o *cli.Options) *cobra.Command {
	opts := &LeaveOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "leave MESH --name NAME [--member-kubeconfig FILE [--member-context CTX]] [--keep-identity] [--dry-run] [--timeout 5m]",
		Short: "Take a cluster out of a mesh, and remove what joining it wrote",
		Long: `Take a cluster out of a ClusterMesh, the reverse of join:

  1. remove its entry from the mesh (a JSON patch that tests the entry's name
     at its index, so a concurrent edit of the list fails it cleanly);
  2. wait until the server has removed the mesh's Peers from that cluster and
     that cluster's Peers from the others (status.departedClusters), showing
     progress, at most --timeout;
  3. delete the kubeconfig Secret the entry named, unless another entry of a
     mesh in the namespace names it;
  4. unless --keep-identity, delete the member identity join applied on the
     cluster (namespace, ServiceAccount, ClusterRole and binding
     kilo-mesh-member), with your credentials there (--member-kubeconfig);
     without them, or while Peers of other meshes on the cluster need the
     identity, it is kept and leave says how to remove it.

--dry-run prints what would be done and changes nothing (the server checks the
patch with a dry run).

A mesh keeps two clusters: in a mesh of two, leave is refused and changes
nothing. Delete the mesh instead (the server removes its Peers everywhere),
join another cluster first, or move the entry to another cluster with
kubectl mesh join --replace.

Exit codes: 0 the cluster left and what joining wrote is removed (or kept as
asked); 2 the server did not finish removing the Peers within --timeout, or
gave up (the reason and the manual step are printed; the Secret and identity
are kept); 1 any other error, nothing changed when it came before the patch.`,
		Example: `  kubectl mesh leave demo --name north --member-kubeconfig north.yaml
  kubectl mesh leave demo --name north --dry-run
  kubectl mesh leave demo --name north --keep-identity --timeout 10m`,
		Args:              cli.MeshArgs,
		ValidArgsFunction: o.CompleteMeshes,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Mesh = args[0]
			if errs := validation.IsDNS1123Label(opts.Name); len(errs) > 0 {
				return fmt.Errorf("--name %q: %s", opts.Name, errs[0])
			}
			return opts.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Name, "name", "", "name of the cluster's entry in the mesh; required")
	f.StringVar(&opts.MemberKubeconfig, "member-kubeconfig", "", "kubeconfig file for the leaving cluster, with rights to delete the member identity there")
	f.StringVar(&opts.MemberContext, "member-context", "", "context of --member-kubeconfig (default: its current context)")
	f.BoolVar(&opts.KeepIdentity, "keep-identity", false, "keep the member identity on the cluster (other meshes may use it)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print what would be done, change nothing")
	f.DurationVar(&opts.Timeout, "timeout", DefaultLeaveTimeout, "how long to wait for the server to remove the mesh's Peers")
	_ = cmd.MarkFlagRequired("name")
	_ = cmd.MarkFlagFilename("member-kubeconfig")
	_ = cmd.RegisterFlagCompletionFunc("name", o.CompleteClusters)
	return cmd
}
