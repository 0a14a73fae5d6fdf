package clusters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// DefaultQPS and DefaultBurst bound the writes to each member cluster when
// Config leaves them unset (the server's --member-cluster-qps and
// --member-cluster-burst start from them): writes come in bulk only when a
// mesh is created or its clusters change, and then a large mesh's Peers are
// created in seconds (docs/performance.md, "The member write rate").
const (
	DefaultQPS   = 200
	DefaultBurst = 400
)

// CacheQPS and CacheBurst bound the caches' lists and watches of each
// member cluster (at most QPS and Burst): they have a rate limiter apart
// from the Peer writes', so that a change's write never waits behind a
// relist, nor a relist behind a mesh's creation. A handful of lists and
// watches per cluster is all the caches need.
const (
	CacheQPS   = 50
	CacheBurst = 100
)

// Config configures a Manager.
type Config struct {
	// Local is the cluster this server runs in: the local member cluster,
	// and where kubeconfig Secrets are read.
	Local *rest.Config
	// AllowInsecureSkipTLSVerify lets tenant kubeconfigs skip TLS
	// verification (an administrator's choice; refused by default).
	AllowInsecureSkipTLSVerify bool
	// ProbeInterval is the time between probes of each member cluster
	// (default DefaultProbeInterval).
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// Clock gives the Since times (default: the real clock).
	Clock clock.PassiveClock
	// QPS and Burst bound the Peer writes to each member cluster, and,
	// capped at CacheQPS and CacheBurst, its caches' lists and watches
	// (default DefaultQPS and DefaultBurst; Burst is at least QPS).
	// Creating a mesh writes one Peer per group of every other cluster,
	// so this sets how fast a large mesh first converges.
	QPS   float32
	Burst int
	// ServerPolicy says where the API servers of each namespace's member
	// clusters may be (default: public addresses only). Call
	// Manager.ServerPolicyChanged when its answers change.
	ServerPolicy memberaccess.ServerPolicy
	// MaxNodes is the most Nodes cached of one member cluster (default
	// DefaultMaxNodes); a cluster with more is not used.
	MaxNodes int
	// MaxPeers is the most Peers cached of one tenant's member cluster
	// (default DefaultMaxPeers); a cluster with more is not used. The local
	// cluster's Peers are not limited: this server writes them for every
	// mesh with access to it.
	MaxPeers int
	// MaxCacheBytes bounds the weight of what is cached of one tenant's
	// member cluster, Nodes and Peers together (default
	// DefaultMaxCacheBytes); a cluster weighing more is not used.
	MaxCacheBytes int64
	// MaxNamespaceCacheBytes bounds the weight of what is cached of the
	// member clusters of one namespace's meshes together, and
	// MaxTotalCacheBytes of every tenant's (see sharedBudget); 0: no limit.
	// A cluster over either is not used.
	MaxNamespaceCacheBytes int64
	MaxTotalCacheBytes     int64
	// MaxServiceExports is the most ServiceExports cached of one member
	// cluster (default DefaultMaxServiceExports), and
	// MaxEndpointsPerService the most endpoints of one exported Service
	// (default DefaultMaxEndpointsPerService); a cluster over either has
	// its services unused (ServicesState.Reason).
	MaxServiceExports      int
	MaxEndpointsPerService int
}

// Manager keeps the member clusters of the meshes it follows (Follow,
// Forget) and the connections it holds past their use (holds.go): these,
// and nothing else, keep a connection open. Its methods are safe for
// concurrent use.
type Manager struct {
	cfg          Config
	hasher       identityHasher
	local        *rest.Config
	secretClient kubernetes.Interface
	shared       *sharedBudget
	interned     *interner
	queue        workqueue.TypedInterface[types.NamespacedName]

	mu       sync.RWMutex
	log      klog.Logger
	ctx      context.Context // set by Run
	stopped  bool
	wg       sync.WaitGroup
	meshes   map[types.NamespacedName]*meshState
	clusters map[clusterID]*cluster
	secrets  map[types.NamespacedName]*secretWatch
	holds    holds
	handlers []func(types.NamespacedName)
	// own recognises the caller's own writes in the caches.
	own atomic.Pointer[OwnWrites]

	// localUID caches the local cluster's kube-system UID (never recreated).
	localUIDMu sync.Mutex
	localUID   string
}

// NewManager returns a Manager; nothing runs until Run.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Local == nil {
		return nil, errors.New("clusters: Config.Local is required")
	}
	if cfg.ProbeInterval < 0 || cfg.ProbeTimeout < 0 {
		return nil, fmt.Errorf("clusters: negative probe interval %v or timeout %v", cfg.ProbeInterval, cfg.ProbeTimeout)
	}
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = DefaultProbeInterval
	}
	if cfg.ProbeTimeout == 0 {
		cfg.ProbeTimeout = min(DefaultProbeTimeout, cfg.ProbeInterval)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.QPS <= 0 {
		cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	}
	if cfg.Burst < int(cfg.QPS) {
		cfg.Burst = int(cfg.QPS)
	}
	if cfg.ServerPolicy == nil {
		cfg.ServerPolicy = memberaccess.StaticServerPolicy(nil)
	}
	if cfg.MaxNodes <= 0 {
		cfg.MaxNodes = DefaultMaxNodes
	}
	if cfg.MaxPeers <= 0 {
		cfg.MaxPeers = DefaultMaxPeers
	}
	if cfg.MaxCacheBytes <= 0 {
		cfg.MaxCacheBytes = DefaultMaxCacheBytes
	}
	if cfg.MaxServiceExports <= 0 {
		cfg.MaxServiceExports = DefaultMaxServiceExports
	}
	if cfg.MaxEndpointsPerService <= 0 {
		cfg.MaxEndpointsPerService = DefaultMaxEndpointsPerService
	}
	local := rest.CopyConfig(cfg.Local)
	// An overall timeout would cut the Secret and Node watches; requests
	// that must end carry their own deadline.
	local.Timeout = 0
	if local.QPS == 0 {
		local.QPS, local.Burst = cfg.QPS, cfg.Burst
	}
	if local.UserAgent == "" {
		local.UserAgent = memberaccess.UserAgent
	}
	secretClient, err := kubernetes.NewForConfig(local)
	if err != nil {
		return nil, fmt.Errorf("clusters: client of the local cluster: %w", err)
	}
	hasher, err := newIdentityHasher()
	if err != nil {
		return nil, fmt.Errorf("clusters: %w", err)
	}
	return &Manager{
		cfg:          cfg,
		hasher:       hasher,
		local:        local,
		secretClient: secretClient,
		shared:       newSharedBudget(cfg.MaxTotalCacheBytes, cfg.MaxNamespaceCacheBytes),
		interned:     newInterner(cfg.Clock),
		queue:        workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[types.NamespacedName]{}),
		log:          klog.Background().WithName("clusters"),
		meshes:       map[types.NamespacedName]*meshState{},
		clusters:     map[clusterID]*cluster{},
		secrets:      map[types.NamespacedName]*secretWatch{},
		holds:        holds{byKey: map[HoldKey]*hold{}},
	}, nil
}

// Run starts the caches of the clusters followed so far and of those
// followed later, and calls the change handlers, until ctx ends; it then
// stops every informer and probe and returns once they have stopped. Call
// it once.
func (m *Manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("clusters")
	ctx = klog.NewContext(ctx, logger)
	m.mu.Lock()
	if m.ctx != nil {
		m.mu.Unlock()
		logger.Error(nil, "Manager.Run called more than once")
		return
	}
	m.ctx, m.log = ctx, logger
	for _, c := range m.clusters {
		c.start(ctx, &m.wg)
	}
	for _, sw := range m.secrets {
		sw.start(ctx, &m.wg)
	}
	m.wg.Go(m.dispatch)
	m.mu.Unlock()
	logger.Info("Member cluster manager started", "probeInterval", m.cfg.ProbeInterval)

	<-ctx.Done()
	m.mu.Lock()
	m.stopped = true
	for _, c := range m.clusters {
		c.stop()
	}
	m.mu.Unlock()
	m.queue.ShutDown()
	m.wg.Wait()
	logger.Info("Member cluster manager stopped")
}

// Follow declares the member clusters mesh needs now. Call it on every add
// and update of a mesh: it is idempotent, and cheap when the clusters'
// local flags and Secret references did not change (Secret content is
// followed by watches, not by Follow). A replaced cluster's new caches are
// set up before the old ones are released, so caches other meshes share
// never stop; the connection of an entry that leaves is held (HoldDeparted).
// When its bindings change the mesh is reported
// changed: a pass that ran before Follow found it unsettled (Settled) and
// would otherwise wait for its recheck.
func (m *Manager) Follow(mesh *meshv1alpha1.ClusterMesh) {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	if m.followBindings(key, mesh) {
		m.queue.Add(key)
	}
}

// followBindings binds the entries of mesh and reports whether any binding
// changed; it takes Manager.mu itself.
func (m *Manager) followBindings(key types.NamespacedName, mesh *meshv1alpha1.ClusterMesh) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	ms := m.meshes[key]
	if ms != nil && ms.uid != mesh.UID {
		// Another mesh of the same name: the one before was deleted.
		m.forgetLocked(key)
		ms = nil
	}
	if ms == nil {
		ms = &meshState{uid: mesh.UID, bindings: map[string]*binding{}}
		m.meshes[key] = ms
	}
	seen := make(map[string]bool, len(mesh.Spec.Clusters))
	for i := range mesh.Spec.Clusters {
		e := &mesh.Spec.Clusters[i]
		seen[e.Name] = true
		spec := specOf(e)
		old := ms.bindings[e.Name]
		if old != nil && old.spec == spec {
			continue
		}
		changed = true
		ms.bindings[e.Name] = m.bindLocked(key, mesh.UID, e.Name, spec)
		if old != nil {
			m.leaveLocked(key, old, HoldDeparted)
			m.unbindLocked(key, old)
		}
	}
	for name, b := range ms.bindings {
		if !seen[name] {
			changed = true
			m.leaveLocked(key, b, HoldDeparted)
			m.unbindLocked(key, b)
			delete(ms.bindings, name)
		}
	}
	m.followServicesLocked(ms, mesh)
	return changed
}

// Forget releases what a deleted mesh used; its connections are held
// (HoldDeleted), and the mesh reported changed, so that what it wrote can
// still be removed.
func (m *Manager) Forget(mesh *meshv1alpha1.ClusterMesh) {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	m.mu.Lock()
	forgotten := m.forgetLocked(key)
	m.mu.Unlock()
	if forgotten {
		m.queue.Add(key)
	}
}

func (m *Manager) forgetLocked(key types.NamespacedName) bool {
	ms := m.meshes[key]
	if ms == nil {
		return false
	}
	for _, b := range ms.bindings {
		m.leaveLocked(key, b, HoldDeleted)
		m.unbindLocked(key, b)
	}
	delete(m.meshes, key)
	return true
}

// Settled reports whether every cluster of mesh, as followed, has synced
// its caches or is known to be unusable (unreachable, refused kubeconfig,
// missing Secret, forbidden, over a cache limit): waiting for those would
// never end. It is asked per mesh, so that one member whose caches never
// sync holds up its own meshes only. A mesh not followed yet is not settled.
func (m *Manager) Settled(mesh *meshv1alpha1.ClusterMesh) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ms := m.meshes[types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}]
	if ms == nil || len(ms.bindings) != len(mesh.Spec.Clusters) {
		// Not followed as it is yet: an entry that left may not be held yet.
		return false
	}
	for i := range mesh.Spec.Clusters {
		e := &mesh.Spec.Clusters[i]
		b := ms.bindings[e.Name]
		switch {
		case b == nil || b.spec != specOf(e):
			return false
		case b.cluster != nil && !b.cluster.settled(), b.err != nil && b.err.Reason == memberaccess.ErrPending:
			return false
		}
	}
	return true
}
