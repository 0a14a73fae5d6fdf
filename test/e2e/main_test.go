//go:build e2e

// Package e2e drives the real kilo-mesh-apiserver binary through real
// kube-apiservers (aggregation layer, RBAC) with the real kubectl.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

var (
	env    *framework.Env
	server *framework.MeshServer
)

// TestMain shares one environment (etcd, kube-apiservers, the registered
// server) across the tests of this package: starting it costs seconds.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	env, err = framework.Start(ctx, framework.Options{Clusters: 2})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the environment: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the environment: %v\n", err)
			code = 1
		}
	}()
	server, err = env.StartMeshServer(ctx, framework.MeshServerOptions{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kilo-mesh-apiserver: %v\n", err)
		return 1
	}
	for _, ns := range []string{framework.NamespaceTenantA, framework.NamespaceTenantB} {
		if err := seedKubeconfigSecret(ctx, ns); err != nil {
			fmt.Fprintf(os.Stderr, "%v\n", err)
			return 1
		}
		// Tenants have edit in their namespace and no Peer rights on the
		// host: without a grant their meshes could not have a local cluster.
		if err := env.ApplyGrant(ctx, ns, framework.TenantGrant(ns)); err != nil {
			fmt.Fprintf(os.Stderr, "%v\n", err)
			return 1
		}
	}
	code = m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "kilo-mesh-apiserver log tail:\n%s\n", server.LogTail(60))
	}
	return code
}

// kubectl runs kubectl on the host cluster of the package's environment as
// user and fails the test on error.
func kubectl(t *testing.T, user string, args ...string) string {
	t.Helper()
	return env.KubectlT(t, framework.HostCluster, user, args...)
}

// kubectlErr runs kubectl expecting it to fail and returns its stderr.
func kubectlErr(t *testing.T, user string, args ...string) string {
	t.Helper()
	out, stderr, err := env.Kubectl(context.Background(), framework.HostCluster, user, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded, want an error; stdout:\n%s", strings.Join(args, " "), out)
	}
	return stderr
}

// kubectlIn runs kubectl with a manifest on stdin.
func kubectlIn(t *testing.T, user, manifest string, args ...string) (string, string, error) {
	t.Helper()
	return env.KubectlWithInput(context.Background(), bytes.NewBufferString(manifest), framework.HostCluster, user, args...)
}

// manifest reads a testdata manifest and names the object.
func manifest(t *testing.T, file, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(b), "name: NAME", "name: "+name, 1)
}

// namespace returns a fresh namespace on the host cluster, holding the
// kubeconfig Secret of the member cluster the test manifests name.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := env.NewNamespace(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := seedKubeconfigSecret(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

// seedKubeconfigSecret stores cluster 1's kubeconfig as west-kubeconfig in
// ns. Every test mesh then names the same real member cluster, as tenants
// sharing a cluster would; admission lets meshes overlap only on a cluster
// they share, because every mesh puts Peers on the local cluster.
func seedKubeconfigSecret(ctx context.Context, ns string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "west-kubeconfig", Namespace: ns},
		Data:       map[string][]byte{"kubeconfig": env.KubeconfigBytes(1, framework.UserAdmin)},
	}
	if _, err := env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the kubeconfig Secret in %s: %w", ns, err)
	}
	return nil
}
