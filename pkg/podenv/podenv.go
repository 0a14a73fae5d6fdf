// Package podenv tells the server where it runs: the namespace of its own
// pod, in which it keeps its Lease and its serving certificate's Secret.
package podenv

import (
	"os"
	"strings"
)

// NamespaceEnv is set by the manifests from the downward API
// (fieldRef metadata.namespace); it wins over the ServiceAccount file.
const NamespaceEnv = "POD_NAMESPACE"

// serviceAccountNamespaceFile is where the kubelet mounts the pod's namespace
// with its ServiceAccount token.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultNamespace is the namespace used outside a pod: the one
// artifacts/deploy installs into.
const DefaultNamespace = "kilo-mesh-system"

// Namespace returns the namespace of the pod this process runs in and true,
// or DefaultNamespace and false outside a pod.
func Namespace() (string, bool) {
	return namespace(os.Getenv(NamespaceEnv), serviceAccountNamespaceFile)
}

func namespace(env, file string) (string, bool) {
	if ns := strings.TrimSpace(env); ns != "" {
		return ns, true
	}
	if data, err := os.ReadFile(file); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns, true
		}
	}
	return DefaultNamespace, false
}
