package clusters

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// The services caches of a member cluster (multi-cluster services, issue
// 20) run only while a mesh using the cluster has spec.multiClusterServices
// Enabled and the cluster serves the mcs-api CRDs, as the Peer informer runs
// only while the Peer CRD is served. The probe decides both.

// Defaults of the limits on what the services caches keep of one cluster.
const (
	// DefaultMaxServiceExports is the most ServiceExports kept of one
	// member cluster: ten times the 500 exported services the performance
	// goal names.
	DefaultMaxServiceExports = 5000
	// DefaultMaxEndpointsPerService is the most endpoints one exported
	// Service may have: the 1,000 the EndpointSlice controller puts in one
	// slice, five times over.
	DefaultMaxEndpointsPerService = 5000
)

// servicesClients read the services resources of a cluster (on the
// informers' client, sharing the cluster's rate limiter) and write them
// (with a request timeout).
type servicesClients struct {
	kube, kubeWrite kubernetes.Interface
	mcs, mcsWrite   mcsclient.Interface
}

// newServicesClients builds them from the cluster's protobuf (kubeCfg) and
// JSON (cfg) configurations: the mcs-api types are CRDs, served as JSON.
func newServicesClients(kubeCfg, cfg *rest.Config, watchClient, requestClient *http.Client) (*servicesClients, error) {
	s := &servicesClients{}
	var err error
	if s.kube, err = kubernetes.NewForConfigAndClient(kubeCfg, watchClient); err != nil {
		return nil, fmt.Errorf("building the services client: %w", err)
	}
	if s.kubeWrite, err = kubernetes.NewForConfigAndClient(kubeCfg, requestClient); err != nil {
		return nil, fmt.Errorf("building the services client: %w", err)
	}
	if s.mcs, err = mcsclient.NewForConfigAndClient(cfg, watchClient); err != nil {
		return nil, fmt.Errorf("building the mcs-api client: %w", err)
	}
	if s.mcsWrite, err = mcsclient.NewForConfigAndClient(cfg, requestClient); err != nil {
		return nil, fmt.Errorf("building the mcs-api client: %w", err)
	}
	return s, nil
}

// checkMCSCRDs reads the discovery document of multicluster.x-k8s.io/v1beta1;
// nil when it cannot tell.
func (c *cluster) checkMCSCRDs(ctx context.Context) *bool {
	gv := mcsv1beta1.SchemeGroupVersion
	var list metav1.APIResourceList
	err := c.probeREST.Get().AbsPath("/apis", gv.Group, gv.Version).MaxRetries(0).Do(ctx).Into(&list)
	served := false
	switch {
	case err == nil:
		served = slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "serviceexports" }) &&
			slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "serviceimports" })
	case apierrors.IsNotFound(err):
	default:
		return nil
	}
	return &served
}

// probeServices runs the services caches exactly while a mesh wants them
// and the cluster serves the mcs-api CRDs; reachable is the probe's outcome.
func (c *cluster) probeServices(ctx context.Context, reachable bool) {
	wanted := c.opts.servicesWanted != nil && c.opts.servicesWanted(c)
	var served *bool
	if wanted && reachable {
		pctx, cancel := context.WithTimeout(ctx, c.opts.probeTimeout)
		served = c.checkMCSCRDs(pctx)
		cancel()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released || c.ctx == nil {
		return
	}
	changed := c.svcWanted != wanted
	c.svcWanted = wanted
	if served != nil {
		changed = changed || c.svcCRDKnown != true || c.svcCRD != *served
		c.svcCRDKnown, c.svcCRD = true, *served
	}
	switch run := wanted && c.svcCRDKnown && c.svcCRD; {
	case run && c.svc == nil:
		svc, err := c.newServicesCaches()
		if err != nil {
			klog.FromContext(c.ctx).Error(err, "Cannot watch the services resources")
			return
		}
		c.svc = svc
		svc.start(c.ctx, c.wg)
	case !run && c.svc != nil:
		c.svc.stop()
		c.svc = nil
		c.health.clearStreams(servicesResources...)
	}
	if changed {
		go c.opts.onChange(c)
	}
}

// clearStreams forgets the failures of informers that no longer run.
func (h *health) clearStreams(resources ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range resources {
		delete(h.streamErr, r)
	}
}

// streamProblem is the first failure of resources not followed by a success.
func (h *health) streamProblem(resources ...string) *memberaccess.Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range resources {
		if e := h.streamErr[r]; e != nil {
			return e
		}
	}
	return nil
}

// ServicesState is what the services caches hold of one member cluster.
// The objects are the caches' own, sorted by namespace and name: read
// them, never modify them. Of each, managed fields and kubectl's
// last-applied copy are dropped; of Namespaces only names are kept; of
// EndpointSlices' endpoints only addresses, conditions, hostname and zone.
type ServicesState struct {
	// Watched: a mesh using the cluster wants services and the cluster
	// serves the mcs-api CRDs, so the caches run.
	Watched bool
	// Synced: every cache holds a complete list, and the Services and
	// EndpointSlices cover every export. An unreachable cluster that had
	// synced keeps its last known objects and stays Synced, as for Nodes.
	// A cluster over a limit is never Synced, and its objects are those
	// last known before (none if it never synced).
	Synced bool
	// Since is when the caches last synced; zero if never.
	Since time.Time
	// Reason is empty when the caches are usable, else why not; LastError
	// explains it and never holds a member's answer.
	Reason    memberaccess.Reason
	LastError string

	Namespaces []string
	Exports    []*mcsv1beta1.ServiceExport
	Imports    []*mcsv1beta1.ServiceImport
	// Services are the exported ones, those at a derived Service's name
	// ("derived-" and 10 characters), and those a mesh wrote (by the label
	// mesh.kilo.squat.ai/mesh-uid).
	Services []*corev1.Service
	// EndpointSlices are the exported Services' own (label
	// kubernetes.io/service-name) and those a mesh wrote (label
	// endpointslice.kubernetes.io/managed-by of this server).
	EndpointSlices []*discoveryv1.EndpointSlice
}

// servicesState is what the services caches hold now; no I/O. A cluster
// whose services caches do not run (nil) reports why.
func (c *cluster) servicesState() *ServicesState {
	c.mu.Lock()
	wanted, crdKnown, crd, svc := c.svcWanted, c.svcCRDKnown, c.svcCRD, c.svc
	c.mu.Unlock()
	switch {
	case !wanted:
		return nil
	case svc == nil && crdKnown && !crd:
		return &ServicesState{Reason: memberaccess.ErrMCSCRDMissing, LastError: fmt.Sprintf("the cluster does not serve serviceexports and serviceimports of %s; install the mcs-api CRDs", mcsv1beta1.SchemeGroupVersion)}
	case svc == nil:
		return &ServicesState{Reason: memberaccess.ErrPending, LastError: "waiting for the probe to tell whether the cluster serves the mcs-api CRDs"}
	}
	return svc.state(c.health)
}

// followServicesLocked records whether mesh wants services and, when that
// changed, has its clusters probed at once, which starts or stops their
// services caches (probeServices).
func (m *Manager) followServicesLocked(ms *meshState, mesh *meshv1alpha1.ClusterMesh) {
	wanted := mesh.Spec.MultiClusterServices == meshv1alpha1.MultiClusterServicesEnabled
	if ms.services == wanted {
		return
	}
	ms.services = wanted
	for _, b := range ms.bindings {
		if b.cluster != nil {
			b.cluster.health.requestProbe()
		}
	}
}

// servicesWanted reports whether a mesh using c has services enabled.
func (m *Manager) servicesWanted(c *cluster) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for key := range c.meshes {
		if ms := m.meshes[key]; ms != nil && ms.services {
			return true
		}
	}
	return false
}

// ServicesClient writes the services objects (ServiceImports, derived
// Services, EndpointSlices, ServiceExport status) of one member cluster
// (Member.Services), with the cluster's rate limit and a request timeout.
// It has no patch: the member identity may not.
type ServicesClient struct {
	// Connection names the connection, as PeerClient.Connection does.
	Connection string
	Kube       kubernetes.Interface
	MCS        mcsclient.Interface
}

// services returns the cluster's services clients, built on first use.
func (c *cluster) services() (*servicesClients, error) {
	c.svcOnce.Do(func() { c.svcClients, c.svcErr = c.newSvcClients() })
	return c.svcClients, c.svcErr
}

// servicesClient is the cluster's services writer.
func (c *cluster) servicesClient() (*ServicesClient, error) {
	cl, err := c.services()
	if err != nil {
		return nil, err
	}
	return &ServicesClient{Connection: c.name(), Kube: cl.kubeWrite, MCS: cl.mcsWrite}, nil
}
