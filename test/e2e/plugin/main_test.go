//go:build e2e

// Package plugin drives `kubectl mesh` end to end: the real kubectl-mesh
// binary run by the real kubectl, against the real server behind the
// aggregation layer of real kube-apiservers. Each test starts its own
// clusters: the meshes here declare networks that would overlap those of
// the other e2e tests on shared clusters.
package plugin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// pluginPath is the kubectl-mesh binary; its directory is on PATH, so that
// kubectl finds it as the plugin of `kubectl mesh`.
var pluginPath string

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	p, err := framework.PluginBinary(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building kubectl-mesh: %v\n", err)
		os.Exit(1)
	}
	pluginPath = p
	// kubectl finds the plugin, and its completion helper, on PATH.
	dir, err := os.MkdirTemp("", "kubectl-mesh-path-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		root, err := framework.RepoRoot()
		if err == nil {
			err = os.Symlink(p, filepath.Join(dir, "kubectl-mesh"))
		}
		if err == nil {
			err = os.Symlink(filepath.Join(root, "cmd", "kubectl-mesh", "kubectl_complete-mesh"), filepath.Join(dir, "kubectl_complete-mesh"))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		return m.Run()
	}()
	os.Exit(code)
}

// result is what one run of a command printed and how it ended.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// mesh runs `kubectl mesh ARGS` as user on the host cluster.
func mesh(t *testing.T, env *framework.Env, user string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stdout, stderr, err := env.Kubectl(ctx, framework.HostCluster, user, append([]string{"mesh"}, args...)...)
	r := result{stdout: stdout, stderr: stderr}
	if err != nil {
		r.code = -1
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			r.code = exit.ExitCode()
		}
	}
	return r
}

// mustMesh is mesh failing the test unless the command exits 0.
func mustMesh(t *testing.T, env *framework.Env, user string, args ...string) result {
	t.Helper()
	r := mesh(t, env, user, args...)
	if r.code != 0 {
		t.Fatalf("kubectl mesh %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// jwtSubject reads the sub claim of a JWT without verifying it.
func jwtSubject(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims.Sub
}
