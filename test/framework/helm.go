package framework

import (
	"context"
	"os"
	"path/filepath"
)

// HelmBinary returns the path of the helm that hack/build-tools.sh builds
// (from its own module, hack/helm) next to kube-apiserver, etcd and kubectl.
// It is looked for on its own, so that tests that do not use it need not
// have it.
func HelmBinary() (string, error) { return toolBinary("helm") }

// toolBinary is tool in ToolsBinDir(), looked for on its own by the tests
// that use it; the error says how to build it.
func toolBinary(tool string) (string, error) {
	path := filepath.Join(ToolsBinDir(), tool)
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", missingTools(ToolsBinDir(), tool)
	}
	return path, nil
}

// Helm runs helm as user on cluster i, isolated from the developer's own
// configuration as kubectl is (HOME and KUBECONFIG in the environment's
// directory), and returns its stdout and stderr.
func (e *Env) Helm(ctx context.Context, cluster int, user string, args ...string) (stdout, stderr string, err error) {
	helm, err := HelmBinary()
	if err != nil {
		return "", "", err
	}
	return runCommand(ctx, nil, e.kubectlEnv(e.Kubeconfig(cluster, user)), helm, args...)
}
