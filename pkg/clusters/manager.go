// Package clusters keeps the clients and caches of the member clusters of
// ClusterMeshes: one client, one Node informer and (while the Kilo Peer CRD
// is served) one Peer informer per distinct member cluster, shared by every
// mesh naming it, started when first needed and stopped when no mesh needs
// them any more. Remote clusters are reached through tenant kubeconfigs kept
// in Secrets of the mesh's namespace, validated by ParseKubeconfig and
// followed live. Everything callers read comes from the caches.
package clusters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// DefaultQPS and DefaultBurst bound the requests to each member cluster
// when Config leaves them unset; the server's --member-cluster-qps and
// --member-cluster-burst start from them. 50 requests per second creates
// the Peers of a 4,000-node cluster in about 80 s (docs/performance.md)
// while staying polite to tenant clusters.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
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
	// QPS and Burst bound the requests to each member cluster, informers and
	// Peer writes together (default DefaultQPS and DefaultBurst; Burst is
	// at least QPS). Creating a mesh writes one Peer per group of every
	// other cluster, so this sets how fast a large mesh first converges.
	QPS   float32
	Burst int
}

// ClusterState is what the caches hold for one member cluster of a mesh.
// Nodes and Peers are the caches' own objects, sorted by name: read them,
// never modify them. Of Nodes only name, labels, annotations, pod CIDRs,
// addresses, the Ready condition and identifying metadata are kept; of
// Peers, metadata (name, uid, resourceVersion, labels) and spec.
type ClusterState struct {
	// Name is the spec.clusters[].name.
	Name string
	// Reachable: the API server answered the last probe.
	Reachable bool
	// Since is when Reachable last changed (or the problem was first seen).
	Since time.Time
	// Reason is empty when the cluster is fully usable, else why not (an
	// unreachable server, a refused kubeconfig rule, a missing Secret, ...).
	Reason Reason
	// LastError explains Reason; never holds secret content.
	LastError string
	// PeerCRD: the cluster serves kilo.squat.ai/v1alpha1 peers.
	PeerCRD bool
	// Synced: Nodes (and Peers, if PeerCRD) hold a complete list. An
	// unreachable cluster that had synced keeps its last known objects and
	// stays Synced; decide nothing about a cluster that is not Synced.
	Synced bool
	Nodes  []*corev1.Node
	Peers  []*kilov1alpha1.Peer
}

// Stats counts what a Manager runs, for tests and debugging.
type Stats struct {
	// Clusters is the number of distinct member clusters with caches
	// (the local one included).
	Clusters int
	// Informers is the number of Node and Peer informers running.
	Informers int
	// SecretWatches is the number of Secret informers running.
	SecretWatches int
}

// Manager keeps the member clusters of the meshes it is told about with
// Ensure. Its methods are safe for concurrent use.
type Manager struct {
	cfg             Config
	hasher          identityHasher
	local           *rest.Config
	secretClient    kubernetes.Interface
	queue           workqueue.TypedInterface[types.NamespacedName]
	informers       atomic.Int64
	secretInformers atomic.Int64

	mu       sync.RWMutex
	log      klog.Logger
	ctx      context.Context // set by Run
	stopped  bool
	wg       sync.WaitGroup
	meshes   map[types.NamespacedName]*meshState
	clusters map[clusterID]*cluster
	secrets  map[types.NamespacedName]*secretWatch
	handlers []func(types.NamespacedName)
}

var _ healthz.HealthChecker = (*Manager)(nil)

// meshState holds the bindings of one mesh, by spec cluster name.
type meshState struct {
	bindings map[string]*binding
}

// bindingSpec is what of a spec.clusters entry decides its cluster.
type bindingSpec struct {
	local      bool
	secretName string
	key        string
}

func specOf(e *meshv1alpha1.ClusterEntry) bindingSpec {
	if e.Local {
		return bindingSpec{local: true}
	}
	if e.KubeconfigSecretRef == nil {
		return bindingSpec{}
	}
	key := e.KubeconfigSecretRef.Key
	if key == "" {
		key = meshv1alpha1.DefaultKubeconfigKey
	}
	return bindingSpec{secretName: e.KubeconfigSecretRef.Name, key: key}
}

// binding ties one cluster entry of a mesh to a cluster, or to the reason
// it has none. Guarded by Manager.mu.
type binding struct {
	name    string
	spec    bindingSpec
	secret  types.NamespacedName // zero unless a Secret is watched for it
	cluster *cluster             // nil exactly when err is set
	err     *Error
	since   time.Time
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
	local := rest.CopyConfig(cfg.Local)
	// An overall timeout would cut the Secret and Node watches; requests
	// that must end carry their own deadline.
	local.Timeout = 0
	if local.QPS == 0 {
		local.QPS, local.Burst = cfg.QPS, cfg.Burst
	}
	if local.UserAgent == "" {
		local.UserAgent = userAgent
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
		queue:        workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[types.NamespacedName]{}),
		log:          klog.Background().WithName("clusters"),
		meshes:       map[types.NamespacedName]*meshState{},
		clusters:     map[clusterID]*cluster{},
		secrets:      map[types.NamespacedName]*secretWatch{},
	}, nil
}

// Run starts the caches of the clusters ensured so far and of those
// ensured later, and calls the change handlers, until ctx ends; it then
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
		sw.start(ctx, &m.wg, &m.secretInformers)
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

// Ensure declares the member clusters mesh needs now. Call it on every add
// and update of a mesh: it is idempotent, and cheap when the clusters'
// local flags and Secret references did not change (Secret content is
// followed by watches, not by Ensure). A replaced cluster's new caches are
// set up before the old ones are released, so caches other meshes share
// never stop.
func (m *Manager) Ensure(mesh *meshv1alpha1.ClusterMesh) {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.meshes[key]
	if ms == nil {
		ms = &meshState{bindings: map[string]*binding{}}
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
		ms.bindings[e.Name] = m.bindLocked(key, e.Name, spec)
		if old != nil {
			m.unbindLocked(key, old)
		}
	}
	for name, b := range ms.bindings {
		if !seen[name] {
			m.unbindLocked(key, b)
			delete(ms.bindings, name)
		}
	}
}

// Forget releases what a deleted mesh used.
func (m *Manager) Forget(namespace, name string) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.meshes[key]
	if ms == nil {
		return
	}
	for _, b := range ms.bindings {
		m.unbindLocked(key, b)
	}
	delete(m.meshes, key)
}

// Snapshot returns, per spec cluster name of mesh, what the caches hold
// now. It does no I/O and does not wait for unreachable clusters. A cluster
// entry that differs from what was last ensured reports ErrPending.
func (m *Manager) Snapshot(mesh *meshv1alpha1.ClusterMesh) map[string]ClusterState {
	type ref struct {
		spec    bindingSpec
		cluster *cluster
		err     *Error
		since   time.Time
	}
	refs := map[string]ref{}
	m.mu.RLock()
	if ms := m.meshes[types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}]; ms != nil {
		for name, b := range ms.bindings {
			refs[name] = ref{spec: b.spec, cluster: b.cluster, err: b.err, since: b.since}
		}
	}
	m.mu.RUnlock()

	out := make(map[string]ClusterState, len(mesh.Spec.Clusters))
	for i := range mesh.Spec.Clusters {
		e := &mesh.Spec.Clusters[i]
		r, ok := refs[e.Name]
		switch {
		case !ok || r.spec != specOf(e):
			err := newError(ErrPending, "", "the cluster is not ensured yet")
			out[e.Name] = ClusterState{Name: e.Name, Reason: err.Reason, LastError: err.Error()}
		case r.err != nil:
			out[e.Name] = ClusterState{Name: e.Name, Since: r.since, Reason: r.err.Reason, LastError: r.err.Error()}
		default:
			st := r.cluster.state()
			st.Name = e.Name
			out[e.Name] = st
		}
	}
	return out
}

// PeerClient returns a client for the Peers of cluster (a spec cluster
// name) of mesh, bound to the connection the mesh uses now. Once the mesh
// stops using that connection (its Secret changed, the mesh was forgotten)
// every call fails with ErrClusterReplaced: take a new Snapshot and a new
// PeerClient.
func (m *Manager) PeerClient(mesh *meshv1alpha1.ClusterMesh, cluster string) (PeerClient, error) {
	m.mu.RLock()
	var b binding
	ms := m.meshes[types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}]
	if ms != nil && ms.bindings[cluster] != nil {
		b = *ms.bindings[cluster]
	}
	m.mu.RUnlock()

	var entry *meshv1alpha1.ClusterEntry
	for i := range mesh.Spec.Clusters {
		if mesh.Spec.Clusters[i].Name == cluster {
			entry = &mesh.Spec.Clusters[i]
		}
	}
	switch {
	case entry == nil:
		return nil, newError(ErrUnknownCluster, "", fmt.Sprintf("mesh %s/%s has no cluster %q", mesh.Namespace, mesh.Name, cluster))
	case b.name == "" || b.spec != specOf(entry):
		return nil, newError(ErrPending, "", fmt.Sprintf("cluster %q of mesh %s/%s is not ensured yet", cluster, mesh.Namespace, mesh.Name))
	case b.err != nil:
		return nil, b.err
	}
	if h := b.cluster.health.view(); h.crdKnown && !h.peerCRD {
		return nil, newError(ErrPeerCRDMissing, "", fmt.Sprintf("cluster %q does not serve %s", cluster, kilov1alpha1.PeerResource))
	}
	return &peerClient{c: b.cluster}, nil
}

// AddChangeHandler registers f to be called with the key of every mesh
// affected when a Node or Peer of one of its clusters changes (beyond
// fields the caches drop), a cluster's caches sync, its reachability, Peer
// CRD or error changes, or its Secret changes what the mesh connects to.
// Calls come one at a time from one goroutine, never from informers; keys
// are de-duplicated while waiting, so f should be quick (enqueue and return).
func (m *Manager) AddChangeHandler(f func(types.NamespacedName)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers = append(m.handlers, f)
}

// HasSynced reports whether the caches of every ensured cluster have
// synced, except those known to be unusable (unreachable, refused
// kubeconfig, missing Secret, forbidden): those must not hold the server's
// readiness. Meshes not ensured yet are the caller's to wait for.
func (m *Manager) HasSynced() bool { return len(m.unsettled(1)) == 0 }

// Name implements healthz.HealthChecker.
func (m *Manager) Name() string { return "member-cluster-caches" }

// Check implements healthz.HealthChecker with HasSynced, for /readyz.
func (m *Manager) Check(*http.Request) error {
	const shown = 5
	if pending := m.unsettled(shown + 1); len(pending) > 0 {
		more := ""
		if len(pending) > shown {
			pending, more = pending[:shown], ", ..."
		}
		return fmt.Errorf("member cluster caches not synced: %s%s", strings.Join(pending, ", "), more)
	}
	return nil
}

// unsettled returns up to limit "namespace/mesh/cluster" entries keeping
// readiness waiting.
func (m *Manager) unsettled(limit int) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for key, ms := range m.meshes {
		for name, b := range ms.bindings {
			waiting := b.cluster != nil && !b.cluster.settled() || b.err != nil && b.err.Reason == ErrPending
			if waiting {
				out = append(out, key.String()+"/"+name)
				if len(out) >= limit {
					sort.Strings(out)
					return out
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// Stats returns what the Manager runs now.
func (m *Manager) Stats() Stats {
	m.mu.RLock()
	n := len(m.clusters)
	m.mu.RUnlock()
	return Stats{Clusters: n, Informers: int(m.informers.Load()), SecretWatches: int(m.secretInformers.Load())}
}

func (m *Manager) bindLocked(mesh types.NamespacedName, name string, spec bindingSpec) *binding {
	b := &binding{name: name, spec: spec, since: m.cfg.Clock.Now()}
	switch {
	case spec.local:
		b.cluster, b.err = m.acquireClusterLocked(mesh, localID, m.local)
	case spec.secretName == "":
		b.err = newError(ErrNoSecretRef, "", "a cluster that is not local needs kubeconfigSecretRef")
	default:
		key := types.NamespacedName{Namespace: mesh.Namespace, Name: spec.secretName}
		if err := m.acquireSecretLocked(key); err != nil {
			b.err = newError(ErrSecretUnreadable, "Secret "+key.String(), err.Error())
			return b
		}
		b.secret = key
		m.resolveLocked(mesh, b)
	}
	return b
}

func (m *Manager) unbindLocked(mesh types.NamespacedName, b *binding) {
	if b.cluster != nil {
		m.releaseClusterLocked(mesh, b.cluster)
		b.cluster = nil
	}
	if b.secret != (types.NamespacedName{}) {
		m.releaseSecretLocked(b.secret)
		b.secret = types.NamespacedName{}
	}
}

// resolveLocked points a Secret binding at the cluster its kubeconfig names
// now, or at the reason it cannot; it reports whether anything changed.
func (m *Manager) resolveLocked(mesh types.NamespacedName, b *binding) bool {
	cfg, id, err := m.kubeconfigLocked(b)
	var c *cluster
	if err == nil {
		if b.cluster != nil && b.cluster.id == id {
			return false
		}
		c, err = m.acquireClusterLocked(mesh, id, cfg)
	}
	log := m.log.WithValues("mesh", mesh, "cluster", b.name, "secret", b.secret)
	if err != nil {
		if b.cluster == nil && sameError(b.err, err) {
			return false
		}
		if b.cluster != nil {
			m.releaseClusterLocked(mesh, b.cluster)
		}
		b.cluster, b.err, b.since = nil, err, m.cfg.Clock.Now()
		if err.Reason != ErrPending {
			log.Info("Member cluster unusable", "reason", err.Reason, "err", err.Error())
		}
		return true
	}
	old := b.cluster
	b.cluster, b.err, b.since = c, nil, m.cfg.Clock.Now()
	if old != nil {
		m.releaseClusterLocked(mesh, old)
		log.Info("Member cluster connection replaced", "old", old.name(), "new", c.name())
	} else {
		log.V(2).Info("Member cluster connection set", "connection", c.name())
	}
	return true
}

// kubeconfigLocked reads and validates the kubeconfig of a Secret binding.
func (m *Manager) kubeconfigLocked(b *binding) (*rest.Config, clusterID, *Error) {
	data, e := m.secrets[b.secret].kubeconfig(b.spec.key)
	if e != nil {
		return nil, "", e
	}
	cfg, err := ParseKubeconfig(data, m.cfg.AllowInsecureSkipTLSVerify)
	if err != nil {
		field := fmt.Sprintf("Secret %s key %q", b.secret, b.spec.key)
		var pe *Error
		if !errors.As(err, &pe) {
			return nil, "", newError(ErrKubeconfigInvalid, field, err.Error())
		}
		if pe.Field != "" {
			field += ": " + pe.Field
		}
		return nil, "", newError(pe.Reason, field, pe.Message)
	}
	cfg.QPS, cfg.Burst = m.cfg.QPS, m.cfg.Burst
	return cfg, m.hasher.id(cfg), nil
}

func (m *Manager) acquireClusterLocked(mesh types.NamespacedName, id clusterID, cfg *rest.Config) (*cluster, *Error) {
	c := m.clusters[id]
	if c == nil {
		var err error
		c, err = newCluster(id, cfg, clusterOptions{
			probeInterval: m.cfg.ProbeInterval,
			probeTimeout:  m.cfg.ProbeTimeout,
			clock:         m.cfg.Clock,
			onChange:      m.clusterChanged,
			informers:     &m.informers,
		})
		if err != nil {
			return nil, newError(ErrKubeconfigInvalid, "", fmt.Sprintf("cannot build a client: %v", err))
		}
		m.clusters[id] = c
		if m.ctx != nil && !m.stopped {
			c.start(m.ctx, &m.wg)
		}
	}
	c.refs++
	c.meshes[mesh]++
	return c, nil
}

func (m *Manager) releaseClusterLocked(mesh types.NamespacedName, c *cluster) {
	c.refs--
	if c.meshes[mesh]--; c.meshes[mesh] <= 0 {
		delete(c.meshes, mesh)
	}
	if c.refs == 0 {
		delete(m.clusters, c.id)
		c.stop()
	}
}

func (m *Manager) acquireSecretLocked(key types.NamespacedName) error {
	sw := m.secrets[key]
	if sw == nil {
		var err error
		if sw, err = newSecretWatch(m.secretClient, key, m.secretChanged); err != nil {
			return err
		}
		m.secrets[key] = sw
		if m.ctx != nil && !m.stopped {
			sw.start(m.ctx, &m.wg, &m.secretInformers)
		}
	}
	sw.refs++
	return nil
}

func (m *Manager) releaseSecretLocked(key types.NamespacedName) {
	sw := m.secrets[key]
	if sw.refs--; sw.refs == 0 {
		delete(m.secrets, key)
		if sw.cancel != nil {
			sw.cancel()
		}
	}
}

// secretChanged re-resolves the bindings of a Secret that changed (or was
// read, or failed to be read).
func (m *Manager) secretChanged(key types.NamespacedName) {
	var affected []types.NamespacedName
	m.mu.Lock()
	for meshKey, ms := range m.meshes {
		for _, b := range ms.bindings {
			if b.secret == key && m.resolveLocked(meshKey, b) {
				affected = append(affected, meshKey)
			}
		}
	}
	m.mu.Unlock()
	for _, k := range affected {
		m.queue.Add(k)
	}
}

// clusterChanged queues the meshes using c; it is called from informers
// and probes, and must not block.
func (m *Manager) clusterChanged(c *cluster) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for k := range c.meshes {
		m.queue.Add(k)
	}
}

// dispatch calls the change handlers for queued meshes until shutdown.
func (m *Manager) dispatch() {
	for {
		key, shutdown := m.queue.Get()
		if shutdown {
			return
		}
		m.mu.RLock()
		handlers := m.handlers
		_, known := m.meshes[key]
		m.mu.RUnlock()
		if known {
			for _, h := range handlers {
				h(key)
			}
		}
		m.queue.Done(key)
	}
}
