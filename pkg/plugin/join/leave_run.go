package join

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// leaveInterval is how often leave reads the mesh while it waits: the
// reconciler writes the status once per pass.
const leaveInterval = time.Second

// departure is what leave found before it changes anything.
type departure struct {
	ns    string
	index int
	entry meshv1alpha1.ClusterEntry
	// server is where the entry's kubeconfig points, "" when unknown.
	server string
	// secret is the Secret the entry names, "" for none; sharedBy names
	// another entry naming it, which keeps it.
	secret, sharedBy string
	// member reaches the departing cluster with the caller's credentials;
	// nil when the identity is not to be deleted, keepWhy then says why.
	member  *rest.Config
	keepWhy string
}

// Run takes the entry out of the mesh, waits for the server to remove what
// the mesh wrote, then removes what join wrote.
func (o *LeaveOptions) Run(ctx context.Context) error {
	w := o.Out
	api, err := o.Meshes()
	if err != nil {
		return err
	}
	host, err := o.Host()
	if err != nil {
		return err
	}
	d, err := o.prepare(ctx, api, host)
	if err != nil {
		return err
	}
	patch, err := removalPatch(d.index, o.Name)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("clustermesh %s/%s", d.ns, o.Mesh)
	if o.DryRun {
		if _, err := api.JSONPatch(ctx, d.ns, o.Mesh, patch, true); err != nil {
			return fmt.Errorf("%s would not take the removal of entry %s, so nothing was changed: %w", what, o.Name, err)
		}
		fmt.Fprintf(w, "Would remove entry %s (spec.clusters[%d], %s) from %s (server dry run: accepted).\n", o.Name, d.index, serverOr(d.server), what)
		fmt.Fprintf(w, "Would wait up to %s until it holds no Peers of the mesh and the other clusters none of it.\n", o.Timeout)
		o.reportCleanup(w, d)
		fmt.Fprintln(w, "\nDry run: nothing was changed.")
		return nil
	}
	patched, err := api.JSONPatch(ctx, d.ns, o.Mesh, patch, false)
	if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			return fmt.Errorf("removing entry %s from %s (was the list changed meanwhile? run leave again): %w", o.Name, what, err)
		}
		return fmt.Errorf("removing entry %s from %s: %w", o.Name, what, err)
	}
	fmt.Fprintf(w, "Entry %s (%s) removed from %s (generation %d).\n", o.Name, serverOr(d.server), what, patched.Generation)
	if err := waitDeparted(ctx, o.ErrOut, func(ctx context.Context) (*meshv1alpha1.ClusterMesh, error) { return api.Get(ctx, d.ns, o.Mesh) },
		o.Name, patched.Generation, o.Timeout); err != nil {
		return cli.WithExitCode(cli.ExitNotReady, fmt.Errorf("%w\n%s", err, o.manualSteps(d)))
	}
	fmt.Fprintf(w, "The server removed the Peers of %s from it and from the other clusters.\n", what)
	return o.cleanup(ctx, w, api, host, d)
}

// prepare finds the entry and decides, before anything changes, what leave
// will remove.
func (o *LeaveOptions) prepare(ctx context.Context, api *cli.MeshAPI, host *cli.Clients) (*departure, error) {
	ns, err := o.Namespace()
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("clustermesh %s/%s", ns, o.Mesh)
	mesh, err := api.Get(ctx, ns, o.Mesh)
	if err != nil {
		return nil, cli.Explain(err, what)
	}
	i := slices.IndexFunc(mesh.Spec.Clusters, func(c meshv1alpha1.ClusterEntry) bool { return c.Name == o.Name })
	if i < 0 {
		return nil, fmt.Errorf("%s has no entry %s (kubectl mesh status %s -n %s lists a cluster still leaving under DEPARTED)", what, o.Name, o.Mesh, ns)
	}
	if atFewestClusters(mesh) {
		return nil, fmt.Errorf("%s has %d clusters, the fewest a mesh may have, so entry %s cannot leave it; nothing was changed. "+
			"To move %s to another cluster: kubectl mesh join %s --name %s -n %s --member-kubeconfig FILE --replace. "+
			"To end the mesh: kubectl delete clustermesh %s -n %s (the server removes its Peers everywhere). "+
			"Or join another cluster first, then leave",
			what, len(mesh.Spec.Clusters), o.Name, o.Name, o.Mesh, o.Name, ns, o.Mesh, ns)
	}
	d := &departure{ns: ns, index: i, entry: mesh.Spec.Clusters[i]}
	if d.entry.Local {
		d.keepWhy = "it is the local cluster: join wrote nothing there"
		return d, nil
	}
	var oldKubeconfig []byte
	if ref := d.entry.KubeconfigSecretRef; ref != nil {
		d.secret = ref.Name
		key := ref.Key
		if key == "" {
			key = meshv1alpha1.DefaultKubeconfigKey
		}
		s, err := host.Kube.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, ref.Name, err)
		default:
			oldKubeconfig = s.Data[key]
		}
		if d.sharedBy, err = secretUser(ctx, api, ns, o.Mesh, o.Name, ref.Name); err != nil {
			return nil, err
		}
	}
	if len(oldKubeconfig) > 0 {
		if cfg, err := memberaccess.ParseKubeconfig(oldKubeconfig, false); err == nil {
			d.server = cfg.Host
		}
	}
	switch {
	case o.KeepIdentity:
		d.keepWhy = "--keep-identity"
	case o.MemberKubeconfig == "":
		d.keepWhy = "no credentials for that cluster were given (--member-kubeconfig)"
	case len(oldKubeconfig) == 0 || d.server == "":
		d.keepWhy = "the entry's Secret holds no kubeconfig that says which cluster it reached"
	default:
		if d.member, err = o.checkedMember(ctx, oldKubeconfig); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// checkedMember is the caller's configuration of the leaving cluster, once
// it is shown to reach the cluster the entry reached: the identity is
// deleted there, and nowhere else.
func (o *LeaveOptions) checkedMember(ctx context.Context, oldKubeconfig []byte) (*rest.Config, error) {
	cfg, err := cli.MemberConfig(o.MemberKubeconfig, o.MemberContext)
	if err != nil {
		return nil, err
	}
	target, err := TargetFrom(rest.CopyConfig(cfg), "")
	if err != nil {
		return nil, err
	}
	change, err := detectChange(ctx, oldKubeconfig, cfg, target)
	if err != nil {
		return nil, err
	}
	if change != nil {
		return nil, fmt.Errorf("--member-kubeconfig reaches %s, not the cluster entry %s reached, %s (%s); nothing was changed", change.newServer, o.Name, change.oldServer, change.why)
	}
	return cfg, nil
}

// secretUser names another entry, of any mesh in the namespace, that names
// Secret secret; "" when none does.
func secretUser(ctx context.Context, api *cli.MeshAPI, ns, mesh, name, secret string) (string, error) {
	list, err := api.List(ctx, ns)
	if err != nil {
		return "", fmt.Errorf("listing the clustermeshes of namespace %s: %w", ns, err)
	}
	for _, m := range list.Items {
		for _, c := range m.Spec.Clusters {
			if m.Name == mesh && c.Name == name {
				continue
			}
			if c.KubeconfigSecretRef != nil && c.KubeconfigSecretRef.Name == secret {
				return fmt.Sprintf("entry %s of clustermesh %s", c.Name, m.Name), nil
			}
		}
	}
	return "", nil
}

// removalPatch removes entry index, testing first that it is still name.
func removalPatch(index int, name string) ([]byte, error) {
	path := fmt.Sprintf("/spec/clusters/%d", index)
	return json.Marshal([]map[string]any{
		{"op": "test", "path": path + "/name", "value": name},
		{"op": "remove", "path": path},
	})
}

// waitDeparted reads the mesh until the server has recorded the departure
// (status.observedGeneration reaches generation) and finished it (no
// status.departedClusters item of name), keeping one progress line on w.
// A reason other than Removing means the server gave up.
func waitDeparted(ctx context.Context, w io.Writer, get func(context.Context) (*meshv1alpha1.ClusterMesh, error), name string, generation int64, timeout time.Duration) error {
	status, err := cli.Poll(ctx, w, "waiting for "+name+" to leave", fmt.Sprintf("generation %d not observed yet", generation), leaveInterval, timeout,
		func(ctx context.Context) (bool, string, error) {
			m, err := get(ctx)
			if err != nil {
				// An aggregated server restarting is waited out.
				return false, "reading the mesh: " + err.Error(), nil
			}
			d := departureIn(m, name, generation)
			return d.gone, d.status, d.err
		})
	if errors.Is(err, cli.ErrTimedOut) {
		return fmt.Errorf("%s has not finished leaving after %s: %s", name, timeout, status)
	}
	return err
}

// departureState is what a mesh's status says of one departure.
type departureState struct {
	// gone: the status of the generation waited for has no item of it.
	gone bool
	// removing: its item says Removing.
	removing bool
	status   string
	// err: the server gave up on it.
	err error
}

// departureIn reads the departure of name from the status of m, which
// counts once it is of generation or later.
func departureIn(m *meshv1alpha1.ClusterMesh, name string, generation int64) departureState {
	if m.Status.ObservedGeneration < generation {
		return departureState{status: fmt.Sprintf("generation %d not observed yet (status is of %d)", generation, m.Status.ObservedGeneration)}
	}
	i := slices.IndexFunc(m.Status.DepartedClusters, func(d meshv1alpha1.DepartedCluster) bool { return d.Name == name })
	if i < 0 {
		return departureState{gone: true}
	}
	d := m.Status.DepartedClusters[i]
	msg := strings.Join(strings.Fields(d.Message), " ")
	if d.Reason != meshv1alpha1.DepartureRemoving {
		return departureState{err: fmt.Errorf("the server gave up removing the Peers of %s (%s): %s: %s", name, serverOr(d.Server), d.Reason, msg)}
	}
	return departureState{removing: true, status: fmt.Sprintf("%s: %s", d.Reason, msg)}
}

// cleanup deletes the Secret and the member identity, as decided.
func (o *LeaveOptions) cleanup(ctx context.Context, w io.Writer, api *cli.MeshAPI, host *cli.Clients, d *departure) error {
	if d.secret != "" && d.sharedBy == "" {
		// Another entry may have come to name it while leave waited.
		shared, err := secretUser(ctx, api, d.ns, o.Mesh, o.Name, d.secret)
		if err != nil {
			return err
		}
		d.sharedBy = shared
	}
	switch {
	case d.secret == "":
	case d.sharedBy != "":
		fmt.Fprintf(w, "Secret %s/%s: kept, %s names it.\n", d.ns, d.secret, d.sharedBy)
	default:
		err := host.Kube.CoreV1().Secrets(d.ns).Delete(ctx, d.secret, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %s/%s: %w", d.ns, d.secret, err)
		}
		fmt.Fprintf(w, "Secret %s/%s: deleted.\n", d.ns, d.secret)
	}
	if d.member == nil {
		o.reportIdentityKept(w, d)
		return nil
	}
	lines, others, err := deleteIdentity(ctx, d.member, d.ns, o.Mesh)
	if err != nil {
		return err
	}
	if others != "" {
		d.keepWhy = others
		o.reportIdentityKept(w, d)
		return nil
	}
	fmt.Fprintf(w, "Member identity on %s:\n", d.server)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
	return nil
}

// reportCleanup says what leave would remove after the wait.
func (o *LeaveOptions) reportCleanup(w io.Writer, d *departure) {
	switch {
	case d.secret == "":
	case d.sharedBy != "":
		fmt.Fprintf(w, "Would keep Secret %s/%s: %s names it.\n", d.ns, d.secret, d.sharedBy)
	default:
		fmt.Fprintf(w, "Would delete Secret %s/%s.\n", d.ns, d.secret)
	}
	if d.member == nil {
		o.reportIdentityKept(w, d)
		return
	}
	fmt.Fprintf(w, "Would delete the member identity on %s (namespace, ServiceAccount, ClusterRole and ClusterRoleBinding %s, and %s if there), unless Peers of other meshes there still need it.\n",
		d.server, memberName, member.ServicesClusterRole)
}

// reportIdentityKept says that the member identity stays, why, and how to
// remove it.
func (o *LeaveOptions) reportIdentityKept(w io.Writer, d *departure) {
	if d.entry.Local {
		return
	}
	fmt.Fprintf(w, "Member identity on %s: kept (%s). To remove it once no mesh uses the cluster: %s\n", serverOr(d.server), d.keepWhy, identityDeleteCommand())
}

// manualSteps says what leave kept when it stopped waiting.
func (o *LeaveOptions) manualSteps(d *departure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The entry is removed; the server goes on removing the Peers (kubectl mesh status %s -n %s lists it under DEPARTED until done).", o.Mesh, d.ns)
	if d.secret != "" && d.sharedBy == "" {
		fmt.Fprintf(&b, " Kept until then: Secret %s/%s, which the server needs to reach the cluster (then: kubectl delete secret -n %s %s)", d.ns, d.secret, d.ns, d.secret)
		if !d.entry.Local && !o.KeepIdentity {
			fmt.Fprintf(&b, ", and the member identity on %s (then: %s)", serverOr(d.server), identityDeleteCommand())
		}
		b.WriteString(".")
	}
	return b.String()
}

func serverOr(s string) string {
	if s == "" {
		return "server unknown"
	}
	return s
}
