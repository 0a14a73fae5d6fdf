package reconciler

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/podenv"
)

// Defaults of the reconciler's flags. The lease lives next to the server's
// ServiceAccount, where artifacts/deploy grants it access to Leases: in the
// pod's own namespace, or DefaultLeaseNamespace outside a pod (the server
// fills it in before Validate).
const (
	DefaultLeaseName           = "kilo-mesh-apiserver"
	DefaultLeaseNamespace      = podenv.DefaultNamespace
	DefaultWorkers             = 4
	DefaultResyncPeriod        = 10 * time.Minute
	DefaultMeshDeletionTimeout = 10 * time.Minute
)

// Options are the reconciler's command-line settings.
type Options struct {
	// LeaderElection decides which replica writes; every replica serves
	// views and keeps caches either way.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// Workers is the number of meshes planned at the same time; a mesh
	// whose pass waits for its Peer writes holds none.
	Workers int
	// ResyncPeriod is how often every mesh is reconciled without a change:
	// a safety net only, since every relevant change is watched.
	ResyncPeriod time.Duration
	// MeshDeletionTimeout is how long a deleted mesh waits for unreachable
	// member clusters before it is released with its Peers left there.
	MeshDeletionTimeout time.Duration
}

// NewOptions returns the defaults: leader election on, with Kubernetes'
// usual lease timings.
func NewOptions() *Options {
	return &Options{
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:   true,
			LeaseDuration: metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline: metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:   metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:  resourcelock.LeasesResourceLock,
			ResourceName:  DefaultLeaseName,
		},
		Workers:             DefaultWorkers,
		ResyncPeriod:        DefaultResyncPeriod,
		MeshDeletionTimeout: DefaultMeshDeletionTimeout,
	}
}

// AddFlags registers the reconciler's flags, with the standard
// --leader-elect-* names of Kubernetes components.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fs)
	if f := fs.Lookup("leader-elect-resource-namespace"); f != nil {
		f.Usage += " Default: the pod's own namespace ($" + podenv.NamespaceEnv + " or the ServiceAccount's), " +
			DefaultLeaseNamespace + " outside a pod, where it must exist."
	}
	fs.IntVar(&o.Workers, "reconciler-workers", o.Workers,
		"Number of ClusterMeshes planned concurrently; a ClusterMesh waiting for its Peer writes, which take turns fairly between namespaces and meshes, does not take one.")
	fs.DurationVar(&o.ResyncPeriod, "reconciler-resync-period", o.ResyncPeriod,
		"How often every ClusterMesh is reconciled even without a change; a safety net, as every relevant change is watched.")
	fs.DurationVar(&o.MeshDeletionTimeout, "mesh-deletion-timeout", o.MeshDeletionTimeout,
		"How long a deleted ClusterMesh waits for unreachable member clusters before it is released; "+
			"its Peers may then be left on those clusters, which a Warning event names.")
}

// Validate reports every invalid option at once.
func (o *Options) Validate() []error {
	var errs []error
	le := o.LeaderElection
	if le.LeaderElect {
		if le.ResourceLock != resourcelock.LeasesResourceLock {
			errs = append(errs, fmt.Errorf("--leader-elect-resource-lock must be %q", resourcelock.LeasesResourceLock))
		}
		if le.ResourceName == "" || le.ResourceNamespace == "" {
			errs = append(errs, errors.New("--leader-elect-resource-name and --leader-elect-resource-namespace are required with --leader-elect"))
		}
		if le.RetryPeriod.Duration <= 0 || le.RenewDeadline.Duration <= le.RetryPeriod.Duration ||
			le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
			errs = append(errs, errors.New("leader election needs 0 < --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration"))
		}
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--reconciler-workers must be at least 1, got %d", o.Workers))
	}
	if o.ResyncPeriod < time.Second {
		errs = append(errs, fmt.Errorf("--reconciler-resync-period must be at least 1s, got %s", o.ResyncPeriod))
	}
	if o.MeshDeletionTimeout < 0 {
		errs = append(errs, fmt.Errorf("--mesh-deletion-timeout must not be negative, got %s", o.MeshDeletionTimeout))
	}
	return errs
}
