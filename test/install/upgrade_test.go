//go:build e2e

package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// previousRelease is the release before this one, as docs/releases.md
// names it: its version and the commit it was built from.
func previousRelease(t *testing.T) (version, commit string) {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(root, "docs", "releases.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?m)^## (v[0-9]+\\.[0-9]+\\.[0-9]+)\\n\\nCommit: `([0-9a-f]{40})`").FindSubmatch(notes)
	if m == nil {
		t.Fatal("docs/releases.md names no release with its commit (## vX.Y.Z, then Commit: `<40 hex digits>`)")
	}
	return string(m[1]), string(m[2])
}

// previousBinary builds the previous release's server from the
// repository's history, once per machine (kept beside the test tools).
func previousBinary(t *testing.T, ctx context.Context) string {
	t.Helper()
	version, commit := previousRelease(t)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("the repository's history has no commit %s (%s), which the upgrade test builds: clone the whole repository "+
			"(git fetch --unshallow): %v\n%s", commit, version, err, out)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "kilo-mesh-apiserver", "releases", version+"-"+commit[:12], "kilo-mesh-apiserver")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	src := t.TempDir()
	archive := exec.CommandContext(ctx, "bash", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "archive", root, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("taking %s out of the history: %v\n%s", commit, err, out)
	}
	tmp := bin + ".build"
	pkg := "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version"
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tmp,
		"-ldflags", fmt.Sprintf("-X %s.gitVersion=%s -X %s.gitCommit=%s", pkg, version, pkg, commit), "./cmd/kilo-mesh-apiserver")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=readonly")
	start := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s (%s): %v\n%s", version, commit, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s from %s in %s", version, commit[:12], time.Since(start).Round(time.Second))
	return bin
}

// previousGrace is the HA pod's terminationGracePeriodSeconds: v0.1.0 may
// hold SIGTERM while a watch through the aggregation layer is open, so its
// pod is killed at the end of that grace, as here.
const previousGrace = 30 * time.Second

// TestUpgrade: the previous release, with a grant, a mesh bounded by it
// and its Peers in its store, is replaced by the image's server in each
// install mode: the default one stopped and started again on its data
// directory, HA rolled as its Deployment does (the new replica starts
// beside the old leader, which then stops). The store comes back as it
// was, the Peers are not written, and no watch sees one change. The
// default mode is then downgraded back in place.
func TestUpgrade(t *testing.T) {
	ctx := testContext(t, 8*time.Minute)
	old := previousBinary(t, ctx)
	out, err := exec.CommandContext(ctx, old, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", old, err, out)
	}
	t.Logf("previous release: %s", strings.TrimSpace(string(out)))
	ensureSmokeNodes(t, ctx)
	fresh, stopFresh := context.WithCancel(ctx)
	defer stopFresh()
	go env.KeepKiloNodesFresh(fresh, 15*time.Second)

	t.Run("default", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "data")
		prev := startServer(t, framework.MeshServerOptions{Binary: old, DataDir: dataDir})
		ns, name, check, stop := seedUpgrade(t, ctx, prev)
		if err := prev.Terminate(previousGrace); err != nil {
			t.Fatal(err)
		}
		cur := startServer(t, framework.MeshServerOptions{DataDir: dataDir})
		check(cur)
		if err := cur.Stop(); err != nil {
			t.Fatal(err)
		}
		// Back to the previous release on what this one wrote.
		again := startServer(t, framework.MeshServerOptions{Binary: old, DataDir: dataDir})
		check(again)
		stop()
		deleteMesh(t, ctx, ns, name)
		if err := again.Terminate(previousGrace); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ha", func(t *testing.T) {
		etcdCluster := startEtcdCluster(t, ctx)
		prefix := "/" + framework.UniqueName("upgrade")
		lease := "--leader-elect-resource-name=" + framework.UniqueName("lease")
		replica := func(binary string) *framework.MeshServer {
			return startServer(t, framework.MeshServerOptions{Binary: binary, Etcd: etcdCluster, EtcdPrefix: prefix, ExtraArgs: []string{lease}})
		}
		prev := replica(old)
		ns, name, check, stop := seedUpgrade(t, ctx, prev)
		// The rollout: a new replica is ready beside the old leader
		// (maxUnavailable 0), then the old one stops and hands the Lease over.
		cur := replica("")
		if err := prev.Terminate(previousGrace); err != nil {
			t.Fatal(err)
		}
		check(cur)
		stop()
		deleteMesh(t, ctx, ns, name)
	})
}

// seedUpgrade creates through server a grant and a mesh bounded by it,
// waits until its Peers are as planned, and starts watching them. check
// then asserts that another server serves the same store and has
// converged without writing one of the mesh's Peers, and that no Peer
// changed since the seed; stop ends the watches.
func seedUpgrade(t *testing.T, ctx context.Context, server *framework.MeshServer) (ns, name string, check func(*framework.MeshServer), stop func()) {
	t.Helper()
	ns, name, mesh := createTenantMesh(t, ctx)
	waitConverged(t, ctx, server)
	before := readStore(t, ctx, ns)
	if c := before["mesh "+ns+"/"+name]; !strings.Contains(c, "Granted=True") || !strings.Contains(c, "Ready=True") {
		t.Fatalf("the mesh in the previous release: %s", c)
	}
	watches := []*peerWatch{watchPeers(t, ctx, 0, string(mesh.GetUID())), watchPeers(t, ctx, 1, string(mesh.GetUID()))}
	check = func(next *framework.MeshServer) {
		t.Helper()
		restored(t, ctx, next, ns, name, before)
		for _, w := range watches {
			for peer, n := range w.seen() {
				t.Errorf("cluster %d: Peer %s changed %d times", w.cluster, peer, n)
			}
		}
	}
	stop = func() {
		for _, w := range watches {
			w.stop()
		}
	}
	return ns, name, check, stop
}
