package clusters

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// Resources a cluster watches, as named in its state and errors.
const (
	resourceNodes = "nodes"
	resourcePeers = "peers"
)

// requestTimeout bounds the requests that must end (Peer writes); watches
// run on a client without it.
const requestTimeout = 15 * time.Second

// clusterOptions are the Manager's settings every cluster shares.
type clusterOptions struct {
	probeInterval time.Duration
	probeTimeout  time.Duration
	clock         clock.PassiveClock
	// maxNodes, maxPeers and maxCacheBytes are Config's MaxNodes, MaxPeers
	// and MaxCacheBytes.
	maxNodes      int
	maxPeers      int
	maxCacheBytes int64
	// shared is the budget of all tenants' member clusters.
	shared *sharedBudget
	// interned shares what the caches of all clusters hold alike.
	interned *interner
	// onChange is told of every change the meshes using the cluster may
	// care about; it must not block.
	onChange func(*cluster)
	// isOwnPeerWrite tells an added or updated Peer that only shows a write of the
	// Manager's user's own; such an event is not a change.
	isOwnPeerWrite func(*cluster, *kilov1alpha1.Peer) bool
	// localUID is the UID of the local cluster's kube-system namespace: a
	// remote cluster answering with it is refused (ErrIsLocalCluster).
	localUID func(context.Context) (string, error)
	// servicesWanted reports whether a mesh using the cluster has services
	// enabled; maxServiceExports and maxEndpointsPerService are Config's.
	servicesWanted                            func(*cluster) bool
	isOwnServicesWrite                        func(c *cluster, kind string, obj metav1.Object) bool
	maxServiceExports, maxEndpointsPerService int
}

// cluster is one distinct member cluster (see clusterID): its clients, its
// Node informer, its Peer informer while the Peer CRD is served, and its
// probe. It is shared by every mesh binding that resolves to its ID.
type cluster struct {
	id     clusterID
	server string // for logs
	opts   clusterOptions
	health *health

	// credentialExpiry is when the tenant's credential says it expires
	// (CredentialExpiry); zero for the local cluster, reached with the
	// server's own identity, which its platform renews.
	credentialExpiry time.Time

	transport http.RoundTripper
	// writeLimiter paces the Peer writes, cacheLimiter the caches' lists
	// and watches (and the services clients).
	writeLimiter, cacheLimiter flowcontrol.RateLimiter
	// peerWrite carries a request timeout; the informers' clients do not.
	// peerApply is its typed twin, for the applies and updates: decoding
	// their answers straight into a Peer costs half what an unstructured
	// copy converted does, twice per write.
	peerWrite dynamic.NamespaceableResourceInterface
	peerApply rest.Interface
	// meta lists and deletes, by their metadata, what meshes wrote (with
	// the writes' rate limit and timeout).
	meta           metadata.Interface
	probeREST      rest.Interface
	identityClient *http.Client
	// peerRead lists and watches Peers as typed objects: decoding them
	// into unstructured maps would take several times their size.
	peerRead rest.Interface
	nodes    cache.SharedIndexInformer
	// nodeList is the nodes informer's objects, sorted.
	nodeList *sortedList[*corev1.Node]
	// nodeLimit and peerLimit read the Nodes and Peers for the informers,
	// bounded as the cluster's limits say.
	nodeLimit *objectLimit
	peerLimit *objectLimit
	// budget bounds what the caches of a tenant's cluster weigh; nil for
	// the local cluster.
	budget *budget
	// svcClients are built by services(), once.
	svcClients    *servicesClients
	svcErr        error
	svcOnce       sync.Once
	newSvcClients func() (*servicesClients, error)

	// refs and meshes are guarded by Manager.mu.
	refs   int
	meshes map[types.NamespacedName]int

	mu       sync.Mutex
	ctx      context.Context // nil until started
	cancel   context.CancelFunc
	wg       *sync.WaitGroup
	released bool
	peers    *runningInformer // nil while the Peer CRD is not served
	// svc runs while svcWanted and the mcs-api CRDs are served (services.go).
	svc                            *servicesCaches
	svcWanted, svcCRDKnown, svcCRD bool
}

type runningInformer struct {
	informer cache.SharedIndexInformer
	list     *sortedList[*kilov1alpha1.Peer]
	cancel   context.CancelFunc
}

// newCluster builds the clients and informers of a cluster. A remote
// cluster (a tenant's kubeconfig) is dialled only at the addresses its
// server policy allows (see memberTransport); the local one is the
// server's own.
func newCluster(id clusterID, cfg *rest.Config, opts clusterOptions, remote bool, allowed []netip.Prefix) (*cluster, error) {
	c := &cluster{id: id, server: cfg.Host, opts: opts, meshes: map[types.NamespacedName]int{}}
	c.health = newHealth(opts.clock, func() { c.opts.onChange(c) })
	if id != localID {
		c.credentialExpiry = memberaccess.CredentialExpiry(cfg)
	}

	var err error
	cfg = rest.CopyConfig(cfg)
	if remote {
		c.transport, err = memberaccess.Transport(cfg, allowed)
	} else {
		c.transport, err = rest.TransportFor(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("building the transport: %w", err)
	}
	core, err := c.buildClients(cfg, opts)
	if err != nil {
		return nil, err
	}

	// The local cluster is the server's own, with a trusted control plane;
	// its Peers are written by this server for every mesh with a grant, so
	// a count or weight limit there would let one tenant's meshes stop all
	// the others'. Its Nodes are counted all the same.
	maxPeers := 0
	if remote {
		c.budget, maxPeers = newBudget(opts.maxCacheBytes), opts.maxPeers
		c.budget.shared = opts.shared
	}
	c.nodeLimit = nodeLimit(core.Nodes(), opts.maxNodes, c.budget, opts.clock)
	c.peerLimit = peerLimit(c.peerRead, maxPeers, c.budget, opts.clock, opts.interned)
	c.nodeList = newSortedList[*corev1.Node]()
	c.nodes, err = c.newListedInformer(resourceNodes, &corev1.Node{}, c.nodeLimit, c.nodeList.touched)
	if err != nil {
		return nil, err
	}
	c.nodeList.store = c.nodes.GetStore()
	return c, nil
}

// newInformer builds an informer of resource on what l reads; l cuts
// every object down to what the cache keeps, so the informer needs no
// transform of its own.
func (c *cluster) newInformer(resource string, example runtime.Object, l *objectLimit) (cache.SharedIndexInformer, error) {
	return c.newListedInformer(resource, example, l, nil)
}

// newListedInformer is newInformer whose event handler calls touched (when
// not nil) with every object it hears of, before reporting the change.
func (c *cluster) newListedInformer(resource string, example runtime.Object, l *objectLimit, touched func(any)) (cache.SharedIndexInformer, error) {
	if touched == nil {
		touched = func(any) {}
	}
	// Every event a watch delivers is evidence of a live server for the
	// probe (health.slowProbe).
	l.heard = c.health.heard
	lw := &cache.ListWatch{ListWithContextFunc: l.List, WatchFuncWithContext: l.Watch}
	inf := cache.NewSharedIndexInformerWithOptions(newObservedListWatch(lw, resource, c.health), example,
		cache.SharedIndexInformerOptions{ObjectDescription: resource + " of " + c.server})
	if err := inf.SetWatchErrorHandlerWithContext(watchErrorHandler(resource, c.health)); err != nil {
		return nil, fmt.Errorf("%s informer: %w", resource, err)
	}
	// Events of the initial list are left out: the meshes hear about the
	// whole list once it has synced.
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			touched(obj)
			if !initial {
				c.changed(resource, "add", obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			touched(newObj)
			if !unchanged(oldObj, newObj, c.opts.clock.Now()) {
				c.changed(resource, "update", newObj)
			}
		},
		DeleteFunc: func(obj any) {
			touched(obj)
			c.changed(resource, "delete", obj)
		},
	}); err != nil {
		return nil, fmt.Errorf("%s informer: %w", resource, err)
	}
	return inf, nil
}

func (c *cluster) newPeerInformer() (*runningInformer, error) {
	list := newSortedList[*kilov1alpha1.Peer]()
	inf, err := c.newListedInformer(resourcePeers, &kilov1alpha1.Peer{}, c.peerLimit, list.touched)
	if err != nil {
		return nil, err
	}
	list.store = inf.GetStore()
	return &runningInformer{informer: inf, list: list}, nil
}

// name identifies the cluster in logs without its credentials.
func (c *cluster) name() string {
	if c.id == localID {
		return string(localID)
	}
	return c.server + "#" + c.id.short()
}

// start runs the Node informer and the probe (which starts the Peer
// informer once it has seen the Peer CRD) until stop or parent ends.
func (c *cluster) start(parent context.Context, wg *sync.WaitGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx != nil || c.released {
		return
	}
	logger := klog.FromContext(parent).WithValues("cluster", c.name())
	ctx, cancel := context.WithCancel(klog.NewContext(parent, logger))
	c.ctx, c.cancel, c.wg = ctx, cancel, wg
	logger.V(2).Info("Starting member cluster caches")
	c.runInformerLocked(ctx, c.nodes)
	wg.Go(func() { c.probeLoop(ctx) })
}

func (c *cluster) runInformerLocked(ctx context.Context, inf cache.SharedIndexInformer) {
	c.wg.Go(func() { inf.RunWithContext(ctx) })
	c.wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			c.opts.onChange(c)
		}
	})
}

// stop ends the cluster's informers and probe for good; their caches stay
// readable.
func (c *cluster) stop() {
	c.mu.Lock()
	c.released = true
	ctx, cancel := c.ctx, c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		klog.FromContext(ctx).V(2).Info("Stopped member cluster caches")
	}
	utilnet.CloseIdleConnectionsFor(c.transport)
}

// setPeerInformer runs the Peer informer while the Peer CRD is served.
func (c *cluster) setPeerInformer(served bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released || c.ctx == nil {
		return
	}
	switch {
	case served && c.peers == nil:
		running, err := c.newPeerInformer()
		if err != nil {
			klog.FromContext(c.ctx).Error(err, "Cannot watch Peers")
			return
		}
		ctx, cancel := context.WithCancel(c.ctx)
		running.cancel = cancel
		c.peers = running
		c.runInformerLocked(ctx, running.informer)
	case !served && c.peers != nil:
		c.peers.cancel()
		c.peers = nil
	}
}

func (c *cluster) peerInformer() cache.SharedIndexInformer {
	if p := c.runningPeers(); p != nil {
		return p.informer
	}
	return nil
}

func (c *cluster) runningPeers() *runningInformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peers
}

// synced reports whether the caches hold a complete list: Nodes, and Peers
// unless the cluster is known not to serve them.
func (c *cluster) synced(h healthView) bool {
	if !c.nodes.HasSynced() || !h.crdKnown {
		return false
	}
	if !h.peerCRD {
		return true
	}
	peers := c.peerInformer()
	return peers != nil && peers.HasSynced()
}

// settled reports whether the cluster no longer keeps Settled waiting:
// synced, or known to be unusable.
func (c *cluster) settled() bool {
	h := c.health.view()
	return h.probed && (h.problem != nil || c.synced(h))
}
