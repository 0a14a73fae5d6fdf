//go:build e2e

package plugin

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestVersion: `kubectl mesh version` learns the server's version through
// the aggregation layer of a real kube-apiserver, as a tenant without any
// grant of its own on the mesh API, and says why when it cannot.
func TestVersion(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 1})
	server := env.StartMeshServerT(t, framework.MeshServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin, err := framework.MeshServerBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The server's own word for its version: "kilo-mesh-apiserver V (...)".
	line, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	fields := strings.Fields(string(line))
	if len(fields) < 2 {
		t.Fatalf("%s --version printed %q", bin, line)
	}
	want := fields[1]

	t.Run("-o json has the server's version, for a tenant", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserTenantA, "version", "-o", "json")
		var v struct {
			ClientVersion struct {
				Version string `json:"version"`
			} `json:"clientVersion"`
			ServerVersion struct {
				Version string `json:"version"`
			} `json:"serverVersion"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("version -o json does not parse (%v):\n%s", err, r)
		}
		if v.ServerVersion.Version != want || v.ClientVersion.Version == "" {
			t.Errorf("version -o json: server %q, want %q (client %q)\n%s", v.ServerVersion.Version, want, v.ClientVersion.Version, r)
		}
	})
	t.Run("text names both", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserViewerA, "version")
		if !strings.HasPrefix(r.stdout, "kubectl-mesh v") || !strings.Contains(r.stdout, "\nkilo-mesh-apiserver "+want+"\n") {
			t.Errorf("version:\n%s", r)
		}
	})
	t.Run("an unreachable server: the client's version and why, exit 1", func(t *testing.T) {
		if err := server.Stop(); err != nil {
			t.Fatal(err)
		}
		r := mesh(t, env, framework.UserTenantA, "version")
		if r.code != 1 || !strings.HasPrefix(r.stdout, "kubectl-mesh v") || strings.Contains(r.stdout, "kilo-mesh-apiserver") ||
			!strings.Contains(r.stderr, "the version of kilo-mesh-apiserver is unknown") {
			t.Errorf("version with the server stopped:\n%s", r)
		}
		r = mesh(t, env, framework.UserTenantA, "version", "-o", "json")
		var v map[string]any
		if r.code != 1 || json.Unmarshal([]byte(r.stdout), &v) != nil || v["clientVersion"] == nil || v["serverVersion"] != nil {
			t.Errorf("version -o json with the server stopped: want exit 1 and the client's version alone:\n%s", r)
		}
	})
}
