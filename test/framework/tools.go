package framework

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// KubeVersion is the Kubernetes release hack/build-tools.sh builds.
const KubeVersion = "v1.36.3"

// ToolsBinEnv names the environment variable that overrides the directory
// holding kube-apiserver, kube-controller-manager, etcd and kubectl.
const ToolsBinEnv = "KILO_MESH_TOOLS_BIN"

// MeshServerBinEnv names an environment variable pointing at a prebuilt
// kilo-mesh-apiserver binary; if unset the framework builds
// ./cmd/kilo-mesh-apiserver itself.
const MeshServerBinEnv = "KILO_MESH_APISERVER_BIN"

// ToolsBinDir returns the directory hack/build-tools.sh builds into:
// $KILO_MESH_TOOLS_BIN, else ~/.cache/kilo-mesh-apiserver/tools-v1.36.3/bin.
func ToolsBinDir() string {
	if dir := os.Getenv(ToolsBinEnv); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "kilo-mesh-apiserver", "tools-"+KubeVersion, "bin")
}

// Tools are the paths of the binaries the framework runs.
type Tools struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	Kubectl               string
}

// FindTools locates etcd, kube-apiserver, kube-controller-manager and
// kubectl in dir (ToolsBinDir()
// if empty). The error says how to build them.
func FindTools(dir string) (Tools, error) {
	if dir == "" {
		dir = ToolsBinDir()
	}
	t := Tools{
		Etcd:                  filepath.Join(dir, "etcd"),
		KubeAPIServer:         filepath.Join(dir, "kube-apiserver"),
		KubeControllerManager: filepath.Join(dir, "kube-controller-manager"),
		Kubectl:               filepath.Join(dir, "kubectl"),
	}
	var missing []string
	for _, p := range []string{t.Etcd, t.KubeAPIServer, t.KubeControllerManager, t.Kubectl} {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, filepath.Base(p))
		}
	}
	if len(missing) > 0 {
		return t, missingTools(dir, missing...)
	}
	return t, nil
}

// missingTools says which tools dir lacks and how to get them: the make
// targets give their tests a directory holding only the tools they build.
func missingTools(dir string, names ...string) error {
	list := strings.Join(names, " ")
	return fmt.Errorf("%s not found in %s: run `bash hack/build-tools.sh %s` (or set %s to the directory holding them); "+
		"under make, the target running this test must name them in its tool list (Makefile, *_TOOLS)",
		strings.Join(names, ", "), dir, list, ToolsBinEnv)
}

// RepoRoot returns the root of the kilo-mesh-apiserver repository: the
// directory of the main module's go.mod, found from this source file (works
// for tests run from any package directory) or else from `go env GOMOD`.
func RepoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		// file is <root>/test/framework/tools.go.
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
		if isRepoRoot(root) {
			return root, nil
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("cannot find the repository root: not inside the kilo-mesh-apiserver module")
	}
	root := filepath.Dir(gomod)
	if !isRepoRoot(root) {
		return "", fmt.Errorf("%s is not the kilo-mesh-apiserver module", gomod)
	}
	return root, nil
}

func isRepoRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	return strings.Contains(string(data), "module github.com/kilo-mesh/kilo-mesh-apiserver\n")
}

// MeshServerBinary returns the path of a kilo-mesh-apiserver binary: the one
// named by $KILO_MESH_APISERVER_BIN, else ./cmd/kilo-mesh-apiserver built
// once per process into ${XDG_CACHE_HOME:-~/.cache}/kilo-mesh-apiserver/build/<checkout>.
// The build goes through a temporary file and a rename, so parallel test
// processes never run a half-written binary.
func MeshServerBinary(ctx context.Context) (string, error) {
	return meshServerBuild.get(ctx)
}

// PluginBinary returns the path of the kubectl-mesh plugin: the one named by
// $KUBECTL_MESH_BIN, else ./cmd/kubectl-mesh built once per process like
// MeshServerBinary. Put its directory on PATH and `kubectl mesh` runs it.
func PluginBinary(ctx context.Context) (string, error) {
	return pluginBuild.get(ctx)
}

// PluginBinEnv names an environment variable pointing at a prebuilt
// kubectl-mesh binary.
const PluginBinEnv = "KUBECTL_MESH_BIN"

var (
	meshServerBuild = &binaryBuild{env: MeshServerBinEnv, pkg: "./cmd/kilo-mesh-apiserver", name: "kilo-mesh-apiserver"}
	pluginBuild     = &binaryBuild{env: PluginBinEnv, pkg: "./cmd/kubectl-mesh", name: "kubectl-mesh"}
)

// binaryBuild builds one command of the repository once per process.
type binaryBuild struct {
	env, pkg, name string

	once sync.Once
	path string
	err  error
}

func (b *binaryBuild) get(ctx context.Context) (string, error) {
	if p := os.Getenv(b.env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", b.env, p, err)
		}
		return p, nil
	}
	b.once.Do(func() {
		b.path, b.err = b.build(ctx)
	})
	return b.path, b.err
}

func (b *binaryBuild) build(ctx context.Context) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	// One directory per checkout: two clones (or git worktrees) testing at
	// once must never run each other's binary.
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(userCacheDir(), "kilo-mesh-apiserver", "build", hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "."+b.name+"-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	// A build can take a while on a cold cache; do not let a short start
	// timeout of the caller cut it off.
	buildCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(buildCtx, "go", "build", "-o", tmp.Name(), b.pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("go build %s (in %s): %w\n%s", b.pkg, root, err, out)
	}
	final := filepath.Join(dir, b.name)
	if err := os.Rename(tmp.Name(), final); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return final, nil
}

func userCacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache")
	}
	return os.TempDir()
}
