package apiserver

import (
	"context"
	"fmt"
	"time"

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
	if local == nil {
		return nil
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(local), "kilo-mesh-apiserver/startup"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, namespaceCheckTimeout)
	defer cancel()
	for {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err):
			return fmt.Errorf("the leader-election Lease's namespace %q does not exist: create it (kubectl create namespace %s), "+
				"choose another with --leader-elect-resource-namespace, or run in a pod (the default is then the pod's namespace)", ns, ns)
		case apierrors.IsForbidden(err):
			// Whether it exists cannot be told; the Lease's own errors will say.
			klog.InfoS("Cannot check that the leader-election namespace exists", "namespace", ns, "err", err)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("checking the leader-election Lease's namespace %q: %w", ns, err)
		case <-time.After(time.Second):
		}
	}
}
