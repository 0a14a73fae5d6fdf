package apiserver

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
)

const reconcilerHook = "kilo-mesh-reconciler"

// installReconciler builds the reconciler on the server's shared caches
// and plan cache and starts it from a post-start hook.
// The hook only starts it: /readyz waits for the hook to return, and the
// reconciler waits for leadership, which may take long.
func installReconciler(generic *genericapiserver.GenericAPIServer, bg *background, opts *reconciler.Options, local *rest.Config, installation string,
	meshes cache.SharedIndexInformer, clusters reconciler.Clusters, planner reconciler.Planner, services reconciler.ServicesPlanner) error {
	meshREST, err := meshRESTClient(generic.LoopbackClientConfig)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(local), "kilo-mesh-apiserver/reconciler"))
	if err != nil {
		return fmt.Errorf("building the reconciler's client of the local cluster: %w", err)
	}
	lease, err := kubernetes.NewForConfig(leaseConfig(local))
	if err != nil {
		return fmt.Errorf("building the reconciler's Lease client: %w", err)
	}
	r, err := reconciler.New(reconciler.Config{
		Options:      *opts,
		Meshes:       meshes,
		Clusters:     clusters,
		Planner:      planner,
		Services:     services,
		MeshREST:     meshREST,
		Kube:         kube,
		Lease:        lease,
		Identity:     replicaIdentity(),
		Installation: installation,
	})
	if err != nil {
		return fmt.Errorf("building the reconciler: %w", err)
	}
	return bg.hook(generic, reconcilerHook, func(ctx context.Context) {
		if err := r.Run(ctx); err != nil {
			klog.ErrorS(err, "Reconciler stopped")
		}
	})
}

// leaseConfig is the configuration of the Lease's client: no client-side
// rate limit (leader election paces itself, a request or two per retry
// period), so that a renewal never waits behind the events or any other
// request of the server and the Lease is not lost to the server's own
// traffic.
func leaseConfig(local *rest.Config) *rest.Config {
	cfg := rest.AddUserAgent(rest.CopyConfig(local), "kilo-mesh-apiserver/leader-election")
	cfg.RateLimiter, cfg.QPS = nil, -1
	return cfg
}

// meshRESTClient talks to the server's own mesh API over the loopback
// connection, as the privileged loopback user.
func meshRESTClient(loopback *rest.Config) (rest.Interface, error) {
	cfg := rest.CopyConfig(loopback)
	cfg.GroupVersion = &meshv1alpha1.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = Codecs.WithoutConversion()
	cfg.UserAgent = "kilo-mesh-apiserver/reconciler"
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the loopback client of %s: %w", meshv1alpha1.SchemeGroupVersion, err)
	}
	return c, nil
}

// replicaIdentity names this replica in the Lease: the pod name when run
// in a pod, made unique so that a restarted process never inherits the
// previous one's leadership.
func replicaIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "kilo-mesh-apiserver"
	}
	return host + "_" + string(uuid.NewUUID())
}
