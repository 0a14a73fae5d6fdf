package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// namespaceCheckTimeout bounds the start-up check of the Lease's namespace.
const namespaceCheckTimeout = 30 * time.Second

// checkBeforeServing fails the start, with a message saying what to do, on
// what would otherwise only show later in a log: a leader-election
// namespace that does not exist (the reconciler would never run while
// /readyz says ok), or no serving certificate to serve.
func (o *Options) checkBeforeServing(ctx context.Context, local *rest.Config) error {
	le := o.Reconciler.LeaderElection
	// A pod's own namespace exists; any other one is checked.
	if le.LeaderElect && (!o.inPod || le.ResourceNamespace != o.namespace) {
		if err := checkNamespace(ctx, local, le.ResourceNamespace); err != nil {
			return err
		}
	}
	if o.certs != nil {
		klog.InfoS("Serving a self-managed certificate", "secret", klog.KRef(o.ServingCert.Namespace, o.ServingCert.SecretName),
			"apiService", o.ServingCert.APIServiceName)
		if err := o.certs.Prime(ctx); err != nil {
			return fmt.Errorf("self-managed serving certificate: %w", err)
		}
	}
	return nil
}

func checkNamespace(ctx context.Context, local *rest.Config, ns string) error {
	_, err := readNamespace(ctx, local, ns)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the leader-election Lease's namespace %q does not exist: create it (kubectl create namespace %s), "+
			"choose another with --leader-elect-resource-namespace, or run in a pod (the default is then the pod's namespace)", ns, ns)
	case apierrors.IsForbidden(err):
		// Whether it exists cannot be told; the Lease's own errors will say.
		klog.InfoS("Cannot check that the leader-election namespace exists", "namespace", ns, "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("checking the leader-election Lease's namespace %q: %w", ns, err)
	}
	return nil
}

// installationID is what names this installation on the Peers it writes
// (planner.LabelInstallation): the UID of the namespace the server runs in
// on the local cluster. Every replica of an installation runs there and
// shares its storage; another installation runs on another cluster or in
// another namespace, and a namespace deleted and created again is a new
// installation, which leaves its predecessor's Peers alone. Reading it
// needs nothing but the namespace, and no storage of its own that could
// be lost or copied.
func installationID(ctx context.Context, local *rest.Config, ns string) (string, error) {
	if local == nil {
		return "", nil
	}
	n, err := readNamespace(ctx, local, ns)
	if err != nil {
		return "", fmt.Errorf("reading the UID of the server's namespace %q, which names this installation's Peers: %w", ns, err)
	}
	return string(n.UID), nil
}

// readNamespace reads a namespace of the local cluster, trying again for
// up to namespaceCheckTimeout while the answer is not a NotFound or a
// Forbidden (the API server may be starting too).
func readNamespace(ctx context.Context, local *rest.Config, ns string) (*corev1.Namespace, error) {
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(local), "kilo-mesh-apiserver/startup"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, namespaceCheckTimeout)
	defer cancel()
	for {
		n, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return n, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Second):
		}
	}
}
