package migrate

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// parseMemberFlags reads --member-kubeconfig NAME=FILE[:CONTEXT] values.
func parseMemberFlags(values []string) (map[string][2]string, error) {
	out := map[string][2]string{}
	for _, v := range values {
		name, file, ok := strings.Cut(v, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("--member-kubeconfig %q: want CLUSTER=FILE or CLUSTER=FILE:CONTEXT", v)
		}
		context := ""
		if i := strings.LastIndex(file, ":"); i > 0 {
			file, context = file[:i], file[i+1:]
		}
		out[name] = [2]string{file, context}
	}
	return out, nil
}

// openMembers returns clients for the mesh's member clusters, as the caller
// can reach them: the host for the local entry; for the others a kubeconfig
// given with --member-kubeconfig, else the one in the entry's Secret, read
// with the caller's rights and parsed with the server's own rules (so the
// plugin talks to the member exactly as the server does, as the member
// identity). A cluster that cannot be opened is left out, with the reason.
func openMembers(ctx context.Context, host *cli.Clients, mesh *meshv1alpha1.ClusterMesh, given map[string][2]string) (map[string]*cli.Clients, map[string]error) {
	out := map[string]*cli.Clients{}
	failed := map[string]error{}
	for _, e := range mesh.Spec.Clusters {
		c, err := openMember(ctx, host, mesh, e, given)
		if err != nil {
			failed[e.Name] = err
			continue
		}
		out[e.Name] = c
	}
	return out, failed
}

func openMember(ctx context.Context, host *cli.Clients, mesh *meshv1alpha1.ClusterMesh, e meshv1alpha1.ClusterEntry, given map[string][2]string) (*cli.Clients, error) {
	ns := mesh.Namespace
	if g, ok := given[e.Name]; ok {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: g[0]}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g[1]}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("--member-kubeconfig %s=%s: %w", e.Name, g[0], err)
		}
		cfg.UserAgent = cli.UserAgent
		return cli.NewClients(cfg)
	}
	if e.Local {
		return host, nil
	}
	ref := e.KubeconfigSecretRef
	if ref == nil {
		return nil, fmt.Errorf("entry %s names no kubeconfig Secret", e.Name)
	}
	key := ref.Key
	if key == "" {
		key = meshv1alpha1.DefaultKubeconfigKey
	}
	secret, err := host.Kube.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w (or pass --member-kubeconfig %s=FILE)", ns, ref.Name, err, e.Name)
	}
	cfg, err := memberaccess.ParseKubeconfig(secret.Data[key], false)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig in Secret %s/%s (key %s) is not one the server accepts: %w; kubectl mesh join %s --name %s --refresh writes one",
			ns, ref.Name, key, err, mesh.Name, e.Name)
	}
	cfg.UserAgent = cli.UserAgent
	return cli.NewClients(cfg)
}
