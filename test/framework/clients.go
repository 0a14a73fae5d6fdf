package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Clients of an environment's clusters: REST configs, clientsets,
// kubeconfigs and the real kubectl, for any of its users.

// NumClusters returns the number of clusters.
func (e *Env) NumClusters() int { return len(e.clusters) }

// Cluster returns cluster i; it panics if i is out of range.
func (e *Env) Cluster(i int) *Cluster { return e.clusters[i] }

// Users returns every user name known to the clusters.
func (e *Env) Users() []string {
	names := make([]string, 0, len(e.users))
	for _, u := range e.users {
		names = append(names, u.Name)
	}
	return names
}

// Token returns the static bearer token of user; it panics for an unknown user.
func (e *Env) Token(user string) string {
	t, ok := e.tokens[user]
	if !ok {
		panic(fmt.Sprintf("framework: unknown user %q (known: %v)", user, e.Users()))
	}
	return t
}

func (e *Env) restConfig(c *Cluster, user string) *rest.Config {
	return &rest.Config{
		Host:            c.URL,
		BearerToken:     e.Token(user),
		TLSClientConfig: rest.TLSClientConfig{CAData: c.ca.CertPEM},
		QPS:             100,
		Burst:           200,
		Timeout:         30 * time.Second,
		UserAgent:       "kilo-mesh-e2e/" + user,
	}
}

// RESTConfig returns a client configuration for user on cluster i.
func (e *Env) RESTConfig(cluster int, user string) *rest.Config {
	return e.restConfig(e.clusters[cluster], user)
}

// Client returns a typed clientset for user on cluster i.
func (e *Env) Client(cluster int, user string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(e.RESTConfig(cluster, user))
}

// Dynamic returns a dynamic client for user on cluster i.
func (e *Env) Dynamic(cluster int, user string) dynamic.Interface {
	return dynamic.NewForConfigOrDie(e.RESTConfig(cluster, user))
}

// KubeconfigFor builds a self-contained kubeconfig (CA embedded) for a
// bearer token on cluster i; it suits a Secret as well as a file.
func (e *Env) KubeconfigFor(cluster int, contextUser, token string) ([]byte, error) {
	c := e.clusters[cluster]
	name := c.Name + "-" + contextUser
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.ca.CertPEM}
	cfg.AuthInfos[contextUser] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: contextUser, Namespace: "default"}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}

// KubeconfigBytes returns the content of Kubeconfig(cluster, user).
func (e *Env) KubeconfigBytes(cluster int, user string) []byte {
	data, err := e.KubeconfigFor(cluster, user, e.Token(user))
	if err != nil {
		panic(err)
	}
	return data
}

// Kubeconfig returns the path of a kubeconfig file for user on cluster i.
func (e *Env) Kubeconfig(cluster int, user string) string {
	e.Token(user) // panics on unknown users
	return filepath.Join(e.Dir, "kubeconfigs", fmt.Sprintf("%s-%s.yaml", e.clusters[cluster].Name, user))
}

func (e *Env) writeKubeconfigs() error {
	dir := filepath.Join(e.Dir, "kubeconfigs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for i := range e.clusters {
		for _, u := range e.users {
			data, err := e.KubeconfigFor(i, u.Name, e.tokens[u.Name])
			if err != nil {
				return err
			}
			if err := os.WriteFile(e.Kubeconfig(i, u.Name), data, 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// Kubectl runs the real kubectl (from the tools directory) as user on
// cluster i and returns its stdout and stderr. The error includes stderr.
func (e *Env) Kubectl(ctx context.Context, cluster int, user string, args ...string) (stdout, stderr string, err error) {
	return e.KubectlWithInput(ctx, nil, cluster, user, args...)
}

// KubectlWithInput is Kubectl with stdin (for `apply -f -`).
func (e *Env) KubectlWithInput(ctx context.Context, stdin io.Reader, cluster int, user string, args ...string) (stdout, stderr string, err error) {
	return runCommand(ctx, stdin, e.kubectlEnv(e.Kubeconfig(cluster, user)), e.tools.Kubectl, args...)
}

// KubectlT runs kubectl as user on cluster i and returns its stdout; when
// kubectl fails, it fails the test with the command and kubectl's stderr.
func (e *Env) KubectlT(t testing.TB, cluster int, user string, args ...string) string {
	t.Helper()
	return e.kubectlT(t, nil, cluster, user, args)
}

// KubectlInT is KubectlT with stdin (a manifest for `apply -f -`).
func (e *Env) KubectlInT(t testing.TB, cluster int, user, stdin string, args ...string) string {
	t.Helper()
	return e.kubectlT(t, strings.NewReader(stdin), cluster, user, args)
}

func (e *Env) kubectlT(t testing.TB, stdin io.Reader, cluster int, user string, args []string) string {
	t.Helper()
	out, stderr, err := e.KubectlWithInput(context.Background(), stdin, cluster, user, args...)
	if err != nil {
		t.Fatalf("kubectl %s (as %s on cluster %d): %v\n%s", strings.Join(args, " "), user, cluster, err, stderr)
	}
	return out
}

// KubectlPath returns the path of the kubectl binary the framework uses.
func (e *Env) KubectlPath() string { return e.tools.Kubectl }

// kubectlEnv isolates kubectl from the developer's own configuration: its
// HOME (discovery cache, ~/.kube/config) lives in the environment dir.
func (e *Env) kubectlEnv(kubeconfig string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "KUBECONFIG="+kubeconfig, "HOME="+filepath.Join(e.Dir, "home"))
}
