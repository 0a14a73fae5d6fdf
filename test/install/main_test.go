//go:build e2e

// Package install tests what a new user installs: the server binary taken
// out of the image archive of `make image` (the host's platform), in the
// default install mode (embedded etcd on a private socket, self-managed
// serving certificate), against real kube-apiservers; and the manifests of
// artifacts/deploy.
package install

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

var (
	env     *framework.Env
	archive *framework.ImageArchive
	// imageBinary is the server binary of the host platform's image.
	imageBinary string
)

const admin = framework.UserAdmin

// TestMain reads the image archive (`make image`; its absence fails every
// test with that advice) and starts one environment of two clusters; each
// test starts its own servers from the image's binary and stops them.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	path, err := framework.ImageArchivePath()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if archive, err = framework.ReadImageArchive(path); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kilo-mesh-image-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if imageBinary, err = archive.ExtractEntrypoint(dir); err != nil {
		fmt.Fprintf(os.Stderr, "taking the server out of %s: %v\n", path, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
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
	return m.Run()
}

// startServer starts the image's server with opts, stopped when the test
// ends. Each server takes a Lease of its own, so that a server of an
// earlier test never holds the reconciler's leadership.
func startServer(t *testing.T, opts framework.MeshServerOptions) *framework.MeshServer {
	t.Helper()
	m, err := tryStartServer(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tryStartServer is startServer returning the error, for use from other
// goroutines than the test's. The binary is the image's unless opts names
// another (an earlier release's).
func tryStartServer(t *testing.T, opts framework.MeshServerOptions) (*framework.MeshServer, error) {
	if opts.Binary == "" {
		opts.Binary = imageBinary
	}
	opts.ExtraArgs = append([]string{"--leader-elect-resource-name=" + framework.UniqueName("lease")}, opts.ExtraArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := env.StartMeshServer(ctx, opts)
	if m != nil {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("log of the server on port %d:\n%s", m.Port, m.LogTail(80))
			}
			if err := m.Stop(); err != nil {
				t.Errorf("stopping the server: %v", err)
			}
		})
	}
	if err != nil {
		return m, fmt.Errorf("starting kilo-mesh-apiserver: %w", err)
	}
	return m, nil
}

func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
