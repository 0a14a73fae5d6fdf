package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// redactedToken stands for the token in what --dry-run prints.
const redactedToken = "REDACTED"

// Run joins the member cluster. Everything that can be checked is checked
// before the first write: the mesh exists, the caller may write the Secret
// and the mesh on the host, the member's networks are known.
func (o *Options) Run(ctx context.Context) error {
	j, err := o.read(ctx)
	if err != nil {
		return err
	}
	if again, err := o.repointing(ctx, j); err != nil || again {
		if err != nil {
			return err
		}
		o.Replace = false
		return o.Run(ctx)
	}
	fmt.Fprintf(j.w, "Joining %s (%s) into clustermesh %s/%s as %q.\n\n", describeMember(o.MemberKubeconfig, o.MemberContext), j.target.Server, j.ns, o.Mesh, o.Name)
	if err := o.write(ctx, j); err != nil {
		return err
	}
	if o.DryRun {
		fmt.Fprintln(j.w, "\nDry run: nothing was written.")
		return nil
	}
	if j.repoint != nil {
		get := func(ctx context.Context) (*meshv1alpha1.ClusterMesh, error) { return j.api.Get(ctx, j.ns, o.Mesh) }
		if err := j.repoint.wait(ctx, o.ErrOut, get, j.repoint.oldPeers(string(j.mesh.UID)), o.Name, j.generation, DefaultLeaveTimeout); err != nil {
			return cli.WithExitCode(cli.ExitNotReady, fmt.Errorf("entry %s reaches %s now; %w (kubectl mesh status %s -n %s lists it under DEPARTED until done)",
				o.Name, j.repoint.change.newServer, err, o.Mesh, j.ns))
		}
		j.repoint.done(j.w, j.ns, o.Mesh)
	}
	fmt.Fprintf(j.w, "\nNext: kubectl mesh status %s -n %s --wait\n", o.Mesh, j.ns)
	return nil
}

// joining is what one join reads before it writes, and what it wrote.
type joining struct {
	w     io.Writer
	ns    string
	api   *cli.MeshAPI
	host  *cli.Clients
	mesh  *meshv1alpha1.ClusterMesh
	entry *meshv1alpha1.ClusterEntry
	// secretName and key hold the entry's kubeconfig; have is that Secret
	// as it is (nil: none).
	secretName, key string
	have            *corev1.Secret
	memberCfg       *rest.Config
	member          *cli.Clients
	target          Target
	// repoint is set when the entry moves to another cluster in place.
	repoint *inPlace
	// generation is the mesh's after the entry was written.
	generation int64
}

// read checks the mesh, the caller's rights on the host and the member,
// and reads what the join starts from.
func (o *Options) read(ctx context.Context) (*joining, error) {
	j := &joining{w: o.report()}
	var err error
	if j.ns, j.api, err = o.NamespacedMeshes(); err != nil {
		return nil, err
	}
	if j.host, err = o.Host(); err != nil {
		return nil, err
	}
	if j.mesh, err = j.api.Get(ctx, j.ns, o.Mesh); err != nil {
		return nil, cli.Explain(err, fmt.Sprintf("clustermesh %s/%s", j.ns, o.Mesh))
	}
	j.entry = findEntry(j.mesh, o.Name)
	if j.entry != nil && j.entry.Local {
		return nil, fmt.Errorf("%s is the local cluster of clustermesh %s/%s: the server reaches it with its own identity, there is nothing to join", o.Name, j.ns, o.Mesh)
	}
	j.secretName, j.key = o.secretRef(j.entry)
	if err := checkHostAccess(ctx, j.host.Kube, j.ns, o.Mesh, j.secretName); err != nil {
		return nil, err
	}
	if j.memberCfg, err = o.memberConfig(); err != nil {
		return nil, err
	}
	if j.member, err = cli.NewClients(j.memberCfg); err != nil {
		return nil, err
	}
	if j.target, err = TargetFrom(rest.CopyConfig(j.memberCfg), o.MemberServer); err != nil {
		return nil, err
	}
	j.have, err = j.host.Kube.CoreV1().Secrets(j.ns).Get(ctx, j.secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		j.have, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", j.ns, j.secretName, err)
	}
	return j, nil
}

// repointing decides what an entry whose Secret reaches another cluster
// than the member kubeconfig does: refused without --replace, moved in
// place at the fewest clusters, else left first; again says the join
// starts over once it has left.
func (o *Options) repointing(ctx context.Context, j *joining) (again bool, err error) {
	if j.entry == nil || j.have == nil {
		return false, nil
	}
	change, err := detectChange(ctx, j.have.Data[j.key], j.memberCfg, j.target)
	if err != nil {
		return false, err
	}
	switch {
	case change == nil:
	case !o.Replace:
		return false, change.refusal(j.ns, o.Mesh, o.Name, atFewestClusters(j.mesh))
	case atFewestClusters(j.mesh):
		j.repoint = &inPlace{change: change, oldKubeconfig: j.have.Data[j.key]}
		j.repoint.announce(j.w, o.Name)
	default:
		if err := o.leaveFirst(ctx, j.w, change); err != nil {
			return false, err
		}
		if !o.DryRun {
			return true, nil
		}
		// The dry run goes on as if the entry had left.
		j.entry, j.have = nil, nil
	}
	return false, nil
}

// write proposes the networks, then writes the member identity, the
// Secret and the entry (or prints them on a dry run).
func (o *Options) write(ctx context.Context, j *joining) error {
	w := j.w
	// What the entry and its Secret hold of the old cluster of a repointed
	// entry is not the new one's.
	kept, credSecret := j.entry, j.have
	if j.repoint != nil {
		kept, credSecret = nil, nil
	}
	nets, err := o.proposeNetworks(ctx, j.member.Kube, kept, otherNetworks(j.mesh, o.Name))
	if err != nil {
		return err
	}
	printNetworks(w, nets)
	patch, upToDate, err := o.admittedEntry(ctx, j.api, j.mesh, kept, j.secretName, j.key, &nets, w)
	if err != nil {
		return err
	}

	services, err := o.chooseServices(ctx, j.member.Dynamic, j.mesh)
	if err != nil {
		return err
	}
	objs, err := identityObjects(services.grant)
	if err != nil {
		return err
	}
	identity, err := applyIdentity(ctx, j.member.Dynamic, objs, o.DryRun)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nMember identity on %s:\n", o.Name)
	for _, line := range identity {
		fmt.Fprintf(w, "  %s\n", line)
	}
	services.report(w, o.ErrOut)

	token, credMsg, err := o.credential(ctx, credSecret, j.key, j.memberCfg, j.member.Kube, j.target)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Credential: %s\n", credMsg)
	kubeconfig, err := BuildKubeconfig(o.Name, j.target, token)
	if err != nil {
		return err
	}
	secret := secretApply(j.ns, j.secretName, j.key, o.Name, kubeconfig)
	if o.DryRun {
		if err := printDryRun(o.Out, objs, j.ns, j.secretName, j.key, o.Name, kubeconfig, patch); err != nil {
			return err
		}
	}
	secretOutcome, err := applySecret(ctx, j.host.Kube, secret, j.have, o.DryRun)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Secret %s/%s (key %s): %s\n", j.ns, j.secretName, j.key, secretOutcome)
	return o.writeEntry(ctx, j, patch, upToDate)
}

// writeEntry applies the entry to the mesh unless it is up to date.
func (o *Options) writeEntry(ctx context.Context, j *joining, patch []byte, upToDate bool) error {
	meshOutcome := outcomeUnchanged
	j.generation = j.mesh.Generation
	switch {
	case upToDate:
	case o.DryRun:
		meshOutcome = outcomeDryRun // preflightEntry's dry run
	default:
		applied, err := j.api.Apply(ctx, j.ns, o.Mesh, patch, cli.ApplyOptions{FieldManager: entryFieldManager(o.Name), Force: true})
		if err != nil {
			return fmt.Errorf("adding entry %s to clustermesh %s/%s: %w", o.Name, j.ns, o.Mesh, err)
		}
		j.generation = applied.Generation
		switch {
		case j.entry == nil:
			meshOutcome = fmt.Sprintf("entry %s added (generation %d)", o.Name, applied.Generation)
		default:
			meshOutcome = fmt.Sprintf("entry %s updated (generation %d)", o.Name, applied.Generation)
		}
	}
	fmt.Fprintf(j.w, "ClusterMesh %s/%s: %s\n", j.ns, o.Mesh, meshOutcome)
	return nil
}

// leaveFirst is the leave of --replace: the entry reaches another cluster,
// which must be rid of the mesh's Peers before the entry moves.
func (o *Options) leaveFirst(ctx context.Context, w io.Writer, change *clusterChange) error {
	fmt.Fprintf(w, "--replace: entry %s reaches %s, the member kubeconfig %s (%s); it leaves first.\n", o.Name, change.oldServer, change.newServer, change.why)
	streams := *o.Options
	streams.Out = w
	leave := &LeaveOptions{Options: &streams, Mesh: o.Mesh, Name: o.Name, DryRun: o.DryRun, Timeout: DefaultLeaveTimeout}
	if err := leave.Run(ctx); err != nil {
		return fmt.Errorf("--replace: entry %s did not leave, so it was not joined again: %w", o.Name, err)
	}
	fmt.Fprintln(w)
	return nil
}

// secretRef is the Secret and key of the member's kubeconfig: the entry's,
// --secret-name, or NAME-kubeconfig.
func (o *Options) secretRef(entry *meshv1alpha1.ClusterEntry) (name, key string) {
	name, key = o.Name+"-kubeconfig", meshv1alpha1.DefaultKubeconfigKey
	if entry != nil && entry.KubeconfigSecretRef != nil {
		name = entry.KubeconfigSecretRef.Name
		if entry.KubeconfigSecretRef.Key != "" {
			key = entry.KubeconfigSecretRef.Key
		}
	}
	if o.SecretName != "" {
		name = o.SecretName
	}
	return name, key
}

// checkHostAccess asks the host, before anything is written on the member,
// whether the caller may write what join writes there: the kubeconfig
// Secret and the mesh (server-side apply is a patch). Whether the server
// takes the entry itself is preflightEntry's question.
func checkHostAccess(ctx context.Context, kube kubernetes.Interface, ns, mesh, secret string) error {
	checks := []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "get", Resource: "secrets", Name: secret},
		{Namespace: ns, Verb: "patch", Resource: "secrets", Name: secret},
		{Namespace: ns, Verb: "patch", Group: meshv1alpha1.GroupName, Resource: "clustermeshes", Name: mesh},
	}
	var missing []string
	for _, attrs := range checks {
		review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("asking the host cluster what you may do: %w", err)
		}
		if !review.Status.Allowed {
			res := attrs.Resource
			if attrs.Group != "" {
				res += "." + attrs.Group
			}
			missing = append(missing, fmt.Sprintf("%s %s/%s", attrs.Verb, res, attrs.Name))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("on the host cluster you may not %s in namespace %s; nothing was changed", strings.Join(missing, ", "), ns)
	}
	return nil
}

// preflightEntry asks the server, before anything is written on the member,
// whether it would take the entry: a server-side dry run of the apply runs
// its admission as for the real one. Its refusal is the server's own words
// and says what is missing, e.g. for a mesh with a local cluster the right
// to manage Peers on the host or a ClusterMeshGrant covering the namespace
// (403), or the networks a grant does not allow (422, per field).
func preflightEntry(ctx context.Context, api *cli.MeshAPI, mesh *meshv1alpha1.ClusterMesh, name string, patch []byte) error {
	_, err := api.Apply(ctx, mesh.Namespace, mesh.Name, patch, cli.ApplyOptions{FieldManager: entryFieldManager(name), Force: true, DryRun: true})
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("clustermesh %s/%s would not take entry %s, so nothing was changed", mesh.Namespace, mesh.Name, name)
	// A 422 lists its fields: one a line reads better than the server's
	// one-line list.
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
		var b strings.Builder
		b.WriteString(msg + ":")
		for _, c := range status.Status().Details.Causes {
			fmt.Fprintf(&b, "\n  %s: %s", c.Field, c.Message)
		}
		return errors.New(b.String())
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// memberConfig is the caller's own configuration of the member cluster:
// used to apply the identity and mint its token, never written anywhere.
func (o *Options) memberConfig() (*rest.Config, error) {
	return cli.MemberConfig(o.MemberKubeconfig, o.MemberContext)
}

func describeMember(file, context string) string {
	if context != "" {
		return fmt.Sprintf("context %s of %s", context, file)
	}
	return file
}

// credential returns the token for the Secret's kubeconfig: the one there,
// if join wrote it for this member and it stays valid for more than
// planner.CredentialRenewWithin, else a new one from a TokenRequest (redacted under
// --dry-run, which requests none).
func (o *Options) credential(ctx context.Context, secret *corev1.Secret, key string, memberCfg *rest.Config, memberKube kubernetes.Interface, target Target) (token, msg string, err error) {
	var data []byte
	if secret != nil {
		data = secret.Data[key]
	}
	verdict, have := judgeExisting(data, target, o.now(), o.Refresh)
	if verdict.reuse {
		if err := verifyToken(ctx, memberCfg, have.token); err != nil {
			verdict = reuseVerdict{reason: err.Error()}
		}
	}
	if verdict.reuse {
		token = have.token
		if o.DryRun {
			token = redactedToken
		}
		return token, "kept: " + verdict.reason + "; --refresh renews it", nil
	}
	if o.DryRun {
		return redactedToken, fmt.Sprintf("a new token for %s, valid %s, would be requested (%s)", member.Username(), days(o.TokenExpiry), verdict.reason), nil
	}
	seconds := int64(o.TokenExpiry / time.Second)
	tr, err := memberKube.CoreV1().ServiceAccounts(member.Namespace).CreateToken(ctx, member.ServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return "", "", fmt.Errorf("requesting a token for %s on the member cluster: %w", member.Username(), err)
	}
	exp := tr.Status.ExpirationTimestamp.Time
	msg = fmt.Sprintf("new token for %s, valid until %s (%s)", member.Username(), exp.UTC().Format(time.RFC3339), verdict.reason)
	if granted := exp.Sub(o.now()); granted < o.TokenExpiry-time.Minute {
		msg += fmt.Sprintf("; the member cluster granted %s of the %s asked (its --service-account-max-token-expiration)", days(granted.Round(time.Hour)), days(o.TokenExpiry))
	}
	return tr.Status.Token, msg, nil
}

// days writes whole days as such: 365d reads better than 8760h0m0s.
func days(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
