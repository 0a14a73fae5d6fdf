//go:build e2e

package install

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestMakePush runs `make push` against a registry on loopback (crane's
// own, from the tools module): the tag then names the archive's image
// index, both platforms included, digest for digest.
func TestMakePush(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "make", args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	mk("crane")
	crane := filepath.Join(root, "hack", "tools", "bin", "crane")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	registry := exec.CommandContext(ctx, crane, "registry", "serve", "--address", addr)
	if err := registry.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		registry.Process.Kill()
		registry.Wait()
	}()
	if err := framework.Eventually(ctx, 100*time.Millisecond, 10*time.Second, func(context.Context) error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Fatalf("crane registry serve on %s: %v", addr, err)
	}

	// make push builds the image again: with the stamps of the archive
	// under test (the tree's commit may have moved since), the same
	// source gives the same bytes.
	img, err := archive.Image(framework.HostPlatform())
	if err != nil {
		t.Fatal(err)
	}
	labels := img.Config.Config.Labels
	ref := fmt.Sprintf("%s/kilo-mesh-apiserver:%s", addr, strings.ReplaceAll(archive.RefName, "+", "_"))
	mk("push", "IMAGE="+ref, "VERSION="+archive.RefName, "GIT_COMMIT="+labels["org.opencontainers.image.revision"],
		"BUILD_DATE="+labels["org.opencontainers.image.created"])
	out, err := exec.CommandContext(ctx, crane, "digest", ref).CombinedOutput()
	if err != nil {
		t.Fatalf("crane digest %s: %v\n%s", ref, err, out)
	}
	rebuilt, err := framework.ReadImageArchive(archive.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != rebuilt.IndexDigest || got != archive.IndexDigest {
		t.Errorf("the registry has %s, the archive %s (rebuilt: %s)", got, archive.IndexDigest, rebuilt.IndexDigest)
	}
	for _, platform := range archive.Platforms {
		out, err := exec.CommandContext(ctx, crane, "config", "--platform", platform, ref).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"User":"65532:65532"`) {
			t.Errorf("crane config --platform %s: %v\n%s", platform, err, out)
		}
	}
}
