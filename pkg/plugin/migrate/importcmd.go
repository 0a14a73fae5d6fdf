package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/views"
)

// importFieldManager owns the fields of an imported mesh.
const importFieldManager = cli.FieldManager + "-import"

// importOptions of `kubectl mesh import`.
type importOptions struct {
	*cli.Options
	file        string
	adopt       bool
	dryRun      bool
	timeout     time.Duration
	probeWindow time.Duration
	members     []string
	now         func() time.Time
}

// NewImportCommand is `kubectl mesh import -f OLD.yaml [--adopt]`.
func NewImportCommand(o *cli.Options) *cobra.Command {
	opts := &importOptions{Options: o, now: time.Now}
	cmd := &cobra.Command{
		Use:   "import -f OLD.yaml [--adopt]",
		Short: "Move a ClusterMesh of the predecessor kilo-clustermesh-operator over",
		Long: `Convert a ClusterMesh of the predecessor operator (kilo.squat.ai/v1alpha1) into a
mesh.kilo.squat.ai ClusterMesh of the same name and namespace, create it
(server-side apply) and print its plan. The typed form converts field by field;
for the flat allowedNetworks form, import lists what you must fill in and
writes nothing.

The predecessor's Peers (labelled kilo-clustermesh.io/mesh) show as conflicts
in the plan; import lists them and what --adopt would do with each. --adopt
first checks that the predecessor operator is stopped, then hands its Peers
over: they are relabelled as the mesh's own, and the server replaces the ones
with a group leader's key by the group's Peer and deletes the rest (per-node
Peers of nodes it groups, old anchor Peers sharing a key) in the same pass, so
no traffic is cut for longer than one apply. import then waits for the server
and checks that every cluster holds one Peer per group and no key twice.

Member clusters are reached with the kubeconfigs in the mesh's Secrets, as the
server reaches them, or with --member-kubeconfig CLUSTER=FILE[:CONTEXT].`,
		Example: `  kubectl mesh import -f old-mesh.yaml --dry-run
  kubectl mesh import -f old-mesh.yaml
  kubectl mesh import -f old-mesh.yaml --adopt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return opts.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.file, "filename", "f", "", "file with the predecessor's ClusterMesh (- for stdin); required")
	f.BoolVar(&opts.adopt, "adopt", false, "hand the predecessor's Peers over to the server (the operator must be stopped)")
	f.BoolVar(&opts.dryRun, "dry-run", false, "print the converted ClusterMesh, checked by the server, and write nothing")
	f.DurationVar(&opts.timeout, "timeout", 2*time.Minute, "how long to wait for the server to read the clusters and, with --adopt, to replace the Peers")
	f.DurationVar(&opts.probeWindow, "operator-probe", DefaultProbeWindow, "how long --adopt watches for the predecessor operator to react")
	f.StringArrayVar(&opts.members, "member-kubeconfig", nil, "CLUSTER=FILE[:CONTEXT]: reach a member with this kubeconfig instead of its Secret's (repeatable)")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

func (o *importOptions) run(ctx context.Context) error {
	given, err := parseMemberFlags(o.members)
	if err != nil {
		return err
	}
	old, err := o.read()
	if err != nil {
		return err
	}
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	conv := Convert(old, ns)
	mesh := conv.Mesh
	if len(conv.Missing) > 0 {
		return ReportFlatForm(o.Out, o.ErrOut, conv)
	}
	host, err := o.Host()
	if err != nil {
		return err
	}
	api, err := o.Meshes()
	if err != nil {
		return err
	}
	body, err := applyConfiguration(mesh)
	if err != nil {
		return err
	}
	applied, err := api.Apply(ctx, mesh.Namespace, mesh.Name, body, cli.ApplyOptions{FieldManager: importFieldManager, DryRun: o.dryRun})
	if err != nil {
		return fmt.Errorf("creating ClusterMesh %s/%s: %w", mesh.Namespace, mesh.Name, err)
	}
	if o.dryRun {
		fmt.Fprintf(o.ErrOut, "The server accepts ClusterMesh %s/%s (dry run: nothing was written).\n", mesh.Namespace, mesh.Name)
		return cli.PrintObject(o.Out, mesh, cli.OutputYAML)
	}
	fmt.Fprintf(o.Out, "ClusterMesh %s/%s (mesh.kilo.squat.ai) applied, generation %d.\n", applied.Namespace, applied.Name, applied.Generation)

	plan, err := o.waitPlan(ctx, api, applied)
	if err != nil {
		return err
	}
	views.RenderPlan(o.Out, plan)

	members, failed := openMembers(ctx, host, applied, given)
	for name, err := range failed {
		fmt.Fprintf(o.ErrOut, "warning: cluster %s is left out: %v\n", name, err)
	}
	fates, err := o.classify(ctx, members, plan, old.Name)
	if err != nil {
		return err
	}
	printFates(o.Out, old, fates)
	if len(fates) == 0 {
		fmt.Fprintf(o.Out, "\nNo Peers of the predecessor's mesh %s on the clusters that could be read: nothing to adopt.\n", old.Name)
		return nil
	}
	if !o.adopt {
		fmt.Fprintf(o.Out, "\nStop the predecessor operator, then run this again with --adopt to hand these Peers over.\n")
		return nil
	}
	return o.adoptPeers(ctx, api, host, members, applied, old, fates)
}

func (o *importOptions) read() (*PredecessorMesh, error) {
	var r io.Reader = o.In
	if o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	meshes, _, err := ReadPredecessorMeshes(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.file, err)
	}
	switch len(meshes) {
	case 0:
		return nil, fmt.Errorf("%s holds no ClusterMesh of %s", o.file, PredecessorGroup)
	case 1:
		return &meshes[0], nil
	default:
		return nil, fmt.Errorf("%s holds %d ClusterMeshes of %s: import one at a time", o.file, len(meshes), PredecessorGroup)
	}
}

// ReportFlatForm tells what the user must fill in of a mesh of the flat
// form (to errOut), writes its skeleton (to out), and returns the error
// saying that nothing was written.
func ReportFlatForm(out, errOut io.Writer, conv Conversion) error {
	mesh := conv.Mesh
	fmt.Fprintf(errOut, "ClusterMesh %s/%s uses the flat allowedNetworks form, which does not say which network is which. Fill in:\n", mesh.Namespace, mesh.Name)
	for _, m := range conv.Missing {
		fmt.Fprintf(errOut, "  %s\n", m)
	}
	fmt.Fprintln(errOut, "in the ClusterMesh below, then create it with kubectl apply -f.")
	if err := WriteSkeleton(out, conv); err != nil {
		return err
	}
	required := 0
	for _, m := range conv.Missing {
		if m.Required {
			required++
		}
	}
	return fmt.Errorf("nothing was written: %d required fields of %s/%s need you", required, mesh.Namespace, mesh.Name)
}

// applyConfiguration is the mesh without what a client never sends.
func applyConfiguration(mesh *meshv1alpha1.ClusterMesh) ([]byte, error) {
	return json.Marshal(map[string]any{
		"apiVersion": mesh.APIVersion,
		"kind":       mesh.Kind,
		"metadata":   map[string]any{"name": mesh.Name, "namespace": mesh.Namespace},
		"spec":       mesh.Spec,
	})
}

// waitPlan waits until the server has read every member cluster (its
// caches fill in seconds), so that the plan printed is not one of a server
// that has not looked yet. Clusters still unreachable at the timeout are
// shown as such.
func (o *importOptions) waitPlan(ctx context.Context, api *cli.MeshAPI, mesh *meshv1alpha1.ClusterMesh) (*meshv1alpha1.ClusterMeshPlan, error) {
	deadline := time.Now().Add(o.timeout)
	for {
		plan, err := api.Plan(ctx, mesh.Namespace, mesh.Name)
		if err != nil {
			return nil, fmt.Errorf("reading the plan of %s/%s: %w", mesh.Namespace, mesh.Name, err)
		}
		all := true
		for _, c := range plan.Clusters {
			all = all && c.Reachable
		}
		if all || time.Now().After(deadline) {
			return plan, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// classify lists the predecessor's Peers and decides about each.
func (o *importOptions) classify(ctx context.Context, members map[string]*cli.Clients, plan *meshv1alpha1.ClusterMeshPlan, oldName string) ([]PeerFate, error) {
	peers, err := listPredecessorPeers(ctx, members, oldName)
	if err != nil {
		return nil, err
	}
	sources := map[string]*SourceKeys{}
	for i := range plan.Clusters {
		c := &plan.Clusters[i]
		s := &SourceKeys{}
		sources[c.Name] = s
		client, ok := members[c.Name]
		if !ok || !c.Reachable {
			continue
		}
		nodes, err := client.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading the nodes of %s: %w", c.Name, err)
		}
		s.Cluster, s.NodeKeys = c, NodeKeys(nodes.Items)
	}
	return Classify(peers, sources), nil
}

func printFates(w io.Writer, old *PredecessorMesh, fates []PeerFate) {
	if len(fates) == 0 {
		return
	}
	fmt.Fprintf(w, "\nPeers of the predecessor's mesh %s (label %s=%s):\n", old.Name, LabelPredecessorMesh, old.Name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLUSTER\tPEER\tSOURCE\t--ADOPT\tWHY")
	for _, f := range fates {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", f.Target, f.Peer.Name, f.Source, f.Action, f.Reason)
	}
	tw.Flush()
}

// adoptPeers checks that the predecessor is stopped, hands its Peers over,
// waits for the server and verifies the result.
func (o *importOptions) adoptPeers(ctx context.Context, api *cli.MeshAPI, host *cli.Clients, members map[string]*cli.Clients,
	mesh *meshv1alpha1.ClusterMesh, old *PredecessorMesh, fates []PeerFate) error {
	oldNS := old.Namespace
	if oldNS == "" {
		oldNS = mesh.Namespace
	}
	fmt.Fprintln(o.Out)
	if err := checkPredecessorStopped(ctx, o.Out, host, oldNS, old.Name, o.probeWindow, o.now); err != nil {
		return err
	}
	handed, err := handOver(ctx, members, mesh, oldNS, old.Name, fates)
	fmt.Fprintf(o.Out, "Handed %d Peers over to the server.\n", len(handed))
	if err != nil {
		return err
	}
	if err := waitConverged(ctx, o.Out, api, members, mesh, handed, o.timeout); err != nil {
		return err
	}
	plan, err := api.Plan(ctx, mesh.Namespace, mesh.Name)
	if err != nil {
		return err
	}
	problems, err := verify(ctx, members, plan, mesh)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(o.ErrOut, "  %s\n", p)
		}
		return fmt.Errorf("adoption finished with %d problems", len(problems))
	}
	fmt.Fprintf(o.Out, "Done: every cluster holds one Peer of %s/%s per group and no public key twice.\n", mesh.Namespace, mesh.Name)
	fmt.Fprintf(o.Out, "Delete the predecessor's ClusterMesh (kubectl delete clustermeshes.%s -n %s %s) and uninstall the operator.\n", PredecessorGroup, oldNS, old.Name)
	return nil
}
