package views

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// waitInterval is how often status --wait reads the mesh: the reconciler
// writes the status once per pass, so polling faster would show nothing new.
const waitInterval = time.Second

// NewStatusCommand is `kubectl mesh status MESH [--wait] [--timeout D]`.
func NewStatusCommand(o *cli.Options) *cobra.Command {
	var wait bool
	var timeout time.Duration
	var output string
	cmd := &cobra.Command{
		Use:   "status MESH [--wait] [--timeout 5m] [-o yaml|json]",
		Short: "Show the mesh's conditions and the figures of every member cluster",
		Long: `Show the conditions of a ClusterMesh and, per member cluster, its
reachability, nodes, groups and Peers. The conditions:
  ` + strings.Join(meshv1alpha1.ConditionTypes, ", ") + `

With --wait, show a live progress line until the mesh is Ready for its current
generation, or until --timeout. -o yaml|json prints the whole ClusterMesh,
status included, instead of the tables.

Exit codes: 0 the mesh is Ready; 2 it is not (with --wait: not within the
timeout); 1 any other error.`,
		Args:              cli.MeshArgs,
		ValidArgsFunction: o.CompleteMeshes,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), o, args[0], wait, timeout, output)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the mesh is Ready, showing progress")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	cli.AddOutputFlag(cmd, &output, "the whole ClusterMesh; the exit code is the same")
	return cmd
}

func runStatus(ctx context.Context, o *cli.Options, name string, wait bool, timeout time.Duration, output string) error {
	ns, api, err := o.NamespacedMeshes()
	if err != nil {
		return err
	}
	what := fmt.Sprintf("clustermesh %s/%s", ns, name)
	mesh, err := api.Get(ctx, ns, name)
	if err != nil {
		return cli.Explain(err, what)
	}
	if wait && !Ready(mesh) {
		mesh, err = waitReady(ctx, o.ErrOut, func(ctx context.Context) (*meshv1alpha1.ClusterMesh, error) {
			return api.Get(ctx, ns, name)
		}, mesh, timeout)
		if err != nil {
			return cli.Explain(err, what)
		}
	}
	if output != "" {
		if err := cli.PrintObject(o.Out, mesh, output); err != nil {
			return err
		}
	} else {
		RenderStatus(cli.Terminal(o.Out), mesh)
	}
	if Ready(mesh) {
		return nil
	}
	msg := fmt.Sprintf("%s is not Ready: %s", what, Progress(mesh))
	if wait {
		msg = fmt.Sprintf("%s is not Ready after %s: %s", what, timeout, Progress(mesh))
	}
	return cli.WithExitCode(cli.ExitNotReady, fmt.Errorf("%s", msg))
}

// waitReady reads the mesh every waitInterval until it is Ready or timeout
// passes, keeping one progress line on w up to date. Errors reading the
// mesh (an aggregated server restarting) are shown and waited out; a mesh
// that is gone ends the wait.
func waitReady(ctx context.Context, w io.Writer, get func(context.Context) (*meshv1alpha1.ClusterMesh, error), mesh *meshv1alpha1.ClusterMesh, timeout time.Duration) (*meshv1alpha1.ClusterMesh, error) {
	_, err := cli.Poll(ctx, w, fmt.Sprintf("waiting for %s/%s to be Ready", mesh.Namespace, mesh.Name), Progress(mesh), waitInterval, timeout,
		func(ctx context.Context) (bool, string, error) {
			m, err := get(ctx)
			switch {
			case apierrors.IsNotFound(err):
				return false, "", err
			case err != nil:
				return false, "reading the mesh: " + err.Error(), nil
			}
			mesh = m
			return Ready(m), Progress(m), nil
		})
	switch {
	case errors.Is(err, cli.ErrTimedOut):
		return mesh, nil
	case apierrors.IsNotFound(err):
		return nil, err
	}
	return mesh, err
}
