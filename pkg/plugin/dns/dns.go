// Package dns is `kubectl mesh dns enable|disable|status`: it makes a
// cluster's own CoreDNS (1.12.2 or later) answer clusterset.local from the
// ServiceImports the server writes, the way the Multi-Cluster Services API
// names them, and undoes exactly that. It adds the multicluster option to
// the Corefile's kubernetes plugin (pkg/plugin/dns/corefile), lets CoreDNS's
// ServiceAccount list and watch ServiceImports (pkg/member CoreDNSRules),
// and records both on the ConfigMap (RecordAnnotation).
package dns

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/dns/corefile"
)

// Options of `kubectl mesh dns`.
type Options struct {
	*cli.Options

	MemberKubeconfig string
	MemberContext    string
	// CoreDNSNamespace and Deployment find CoreDNS.
	CoreDNSNamespace string
	Deployment       string
	deploymentGiven  bool
	DryRun           bool
	// Restart restarts CoreDNS even when its reload plugin would reread
	// the Corefile.
	Restart          bool
	SkipVersionCheck bool
}

// NewCommand is `kubectl mesh dns`.
func NewCommand(o *cli.Options) *cobra.Command {
	opts := &Options{Options: o}
	cmd := &cobra.Command{
		Use:   "dns enable|disable|status [--member-kubeconfig FILE [--member-context CTX]]",
		Short: "Make a cluster's CoreDNS answer clusterset.local names of multi-cluster services",
		Long: `Configure the cluster's own CoreDNS to answer the Multi-Cluster Services
names of what the mesh imports there:

  <service>.<namespace>.svc.clusterset.local               the import's IPs, or for
                                                          a headless one its endpoints
  <hostname>.<cluster>.<service>.<namespace>.svc.clusterset.local
                                                          one endpoint with a hostname
                                                          (a StatefulSet's pod)

CoreDNS 1.12.2 and later does this with its kubernetes plugin's multicluster
option; no other image is needed. The cluster is the one of --member-kubeconfig
(and --member-context), else the host cluster of the kubeconfig flags: run it
on every cluster whose pods resolve those names.`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&opts.MemberKubeconfig, "member-kubeconfig", "", "kubeconfig file of the cluster whose CoreDNS to configure, with rights to edit its ConfigMap and RBAC (default: the host cluster of --kubeconfig/--context)")
	f.StringVar(&opts.MemberContext, "member-context", "", "context of --member-kubeconfig (default: its current context)")
	f.StringVar(&opts.CoreDNSNamespace, "coredns-namespace", metav1.NamespaceSystem, "namespace of CoreDNS's Deployment")
	f.StringVar(&opts.Deployment, "coredns-deployment", DefaultDeployment, "name of CoreDNS's Deployment (default: coredns, else the one labelled k8s-app=kube-dns)")
	_ = cmd.MarkPersistentFlagFilename("member-kubeconfig")
	cmd.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		opts.deploymentGiven = cmd.Flags().Changed("coredns-deployment")
	}
	cmd.AddCommand(newEnableCommand(opts), newDisableCommand(opts), newStatusCommand(opts))
	return cmd
}

// cluster is the cluster the command works on, and its CoreDNS.
type cluster struct {
	kube    kubernetes.Interface
	disco   discovery.DiscoveryInterface
	install *install
	name    string
}

// connect reaches the cluster and reads its CoreDNS Deployment.
func (o *Options) connect(ctx context.Context) (*cluster, error) {
	var cfg *rest.Config
	var err error
	name := "the host cluster"
	if o.MemberKubeconfig != "" {
		cfg, err = cli.MemberConfig(o.MemberKubeconfig, o.MemberContext)
		name = o.MemberKubeconfig
		if o.MemberContext != "" {
			name = fmt.Sprintf("context %s of %s", o.MemberContext, o.MemberKubeconfig)
		}
	} else {
		cfg, err = o.RESTConfig()
	}
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	in, err := findInstall(ctx, kube, o.CoreDNSNamespace, o.Deployment, o.deploymentGiven)
	if err != nil {
		return nil, err
	}
	return &cluster{kube: kube, disco: kube.Discovery(), install: in, name: name}, nil
}

// corefile reads the ConfigMap and its Corefile.
func (c *cluster) corefile(ctx context.Context) (*corev1.ConfigMap, string, error) {
	in := c.install
	cm, err := c.kube.CoreV1().ConfigMaps(in.Namespace).Get(ctx, in.ConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("reading the Corefile's ConfigMap %s/%s: %w", in.Namespace, in.ConfigMap, err)
	}
	src, ok := cm.Data[in.Key]
	if !ok {
		return nil, "", fmt.Errorf("ConfigMap %s/%s has no key %s, where %s reads its Corefile", in.Namespace, in.ConfigMap, in.Key, in)
	}
	return cm, src, nil
}

// importsServed tells whether ServiceImports are served in the version
// CoreDNS reads (v1alpha1, which mcs-api's CRDs serve beside v1beta1).
func (c *cluster) importsServed() (bool, error) {
	const gv = "multicluster.x-k8s.io/v1alpha1"
	list, err := c.disco.ServerResourcesForGroupVersion(gv)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "serviceimports" {
			return true, nil
		}
	}
	return false, nil
}

// writeCorefile updates the ConfigMap at the resourceVersion it was read
// at, with src and the record (none when r is nil).
func (c *cluster) writeCorefile(ctx context.Context, cm *corev1.ConfigMap, src string, r *record) (*corev1.ConfigMap, error) {
	cm = cm.DeepCopy()
	cm.Data[c.install.Key] = src
	if r == nil {
		delete(cm.Annotations, RecordAnnotation)
	} else {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[RecordAnnotation] = r.encode()
	}
	updated, err := c.kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: cli.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("writing the Corefile to ConfigMap %s/%s (rerun if it changed meanwhile): %w", cm.Namespace, cm.Name, err)
	}
	return updated, nil
}

// apply makes CoreDNS read the new Corefile: its reload plugin does within
// about two minutes, else (or with --restart) a rollout restart.
func (c *cluster) apply(ctx context.Context, w io.Writer, src string, restart bool) error {
	in := c.install
	if !restart && corefile.Reloads(src, corefile.Zone) {
		fmt.Fprintf(w, "CoreDNS rereads it by itself (its reload plugin): within about two minutes, the kubelet's refresh of the ConfigMap and the plugin's check every 30 s; --restart restarts it at once.\n")
		return nil
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	if _, err := c.kube.AppsV1().Deployments(in.Namespace).Patch(ctx, in.Deployment, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: cli.FieldManager}); err != nil {
		return fmt.Errorf("restarting Deployment %s/%s (kubectl rollout restart does the same): %w", in.Namespace, in.Deployment, err)
	}
	fmt.Fprintf(w, "Restarted Deployment %s/%s (as kubectl rollout restart does): its new pods read the new Corefile.\n", in.Namespace, in.Deployment)
	return nil
}

// printDiff writes a unified diff of the Corefile.
func printDiff(w io.Writer, in *install, before, after string) error {
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(before), B: difflib.SplitLines(after),
		FromFile: fmt.Sprintf("ConfigMap %s/%s %s (now)", in.Namespace, in.ConfigMap, in.Key),
		ToFile:   fmt.Sprintf("ConfigMap %s/%s %s (after)", in.Namespace, in.ConfigMap, in.Key),
		Context:  3,
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text)
	return err
}

// guarded is an error whose text is safe for a terminal: it may quote what
// the cluster holds (a Corefile's lines, an image name), which could carry
// control characters.
type guarded struct{ err error }

func (g guarded) Error() string {
	var b strings.Builder
	fmt.Fprint(cli.Terminal(&b), g.err.Error())
	return b.String()
}

func (g guarded) Unwrap() error { return g.err }

// guard wraps err, keeping its exit code.
func guard(err error) error {
	if err == nil {
		return nil
	}
	return guarded{err}
}

// yamlDoc is obj as one document of a YAML stream.
func yamlDoc(obj map[string]any) ([]byte, error) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), b...), nil
}
