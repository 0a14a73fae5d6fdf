package clusters

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Bindings are how the Manager keeps track of what each mesh uses. Follow
// and Forget bind and unbind; a Secret watch re-resolves the bindings naming
// its Secret when the Secret changes. Clusters and Secret watches are shared
// between bindings by reference counts and stopped with their last binding.
// The ...Locked methods run with Manager.mu held for writing; secretChanged
// and clusterChanged are callbacks and take it themselves.

// meshState holds the bindings of one mesh, by spec cluster name.
type meshState struct {
	uid      types.UID
	bindings map[string]*binding
	services bool // spec.multiClusterServices is Enabled
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
	uid     types.UID // the mesh's
	spec    bindingSpec
	secret  types.NamespacedName // zero unless a Secret is watched for it
	cluster *cluster             // nil exactly when err is set
	err     *memberaccess.Error
	since   time.Time
}

// secretGone is the key of the hold on the connection b had when its
// Secret went away.
func (b *binding) secretGone(mesh types.NamespacedName) HoldKey {
	return HoldKey{Mesh: mesh, UID: b.uid, Entry: b.name, Why: HoldSecretGone}
}

func (m *Manager) bindLocked(mesh types.NamespacedName, uid types.UID, name string, spec bindingSpec) *binding {
	b := &binding{name: name, uid: uid, spec: spec, since: m.cfg.Clock.Now()}
	switch {
	case spec.local:
		b.cluster, b.err = m.acquireClusterLocked(mesh, localID, m.local, nil)
	case spec.secretName == "":
		b.err = newError(memberaccess.ErrNoSecretRef, "", "a cluster that is not local needs kubeconfigSecretRef")
	default:
		key := types.NamespacedName{Namespace: mesh.Namespace, Name: spec.secretName}
		if err := m.acquireSecretLocked(key); err != nil {
			b.err = newError(memberaccess.ErrSecretUnreadable, "Secret "+key.String(), err.Error())
			return b
		}
		b.secret = key
		m.resolveLocked(mesh, b)
	}
	return b
}

func (m *Manager) unbindLocked(mesh types.NamespacedName, b *binding) {
	m.releaseSecretGoneLocked(mesh, b)
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
	cfg, allowed, id, err := m.kubeconfigLocked(b)
	var c *cluster
	if err == nil {
		if b.cluster != nil && b.cluster.id == id {
			return false
		}
		c, err = m.acquireClusterLocked(mesh, id, cfg, allowed)
	}
	log := m.log.WithValues("mesh", mesh, "cluster", b.name, "secret", b.secret)
	if err != nil {
		secretAbsent := err.Reason == memberaccess.ErrSecretNotFound || err.Reason == memberaccess.ErrSecretUnreadable
		if !secretAbsent {
			m.releaseSecretGoneLocked(mesh, b)
		}
		if b.cluster == nil && sameError(b.err, err) {
			return false
		}
		if b.cluster != nil && secretAbsent {
			m.holdLocked(b.secretGone(mesh), b.cluster, b.spec.local, false)
		} else if b.cluster != nil {
			m.releaseClusterLocked(mesh, b.cluster)
		}
		b.cluster, b.err, b.since = nil, err, m.cfg.Clock.Now()
		if err.Reason != memberaccess.ErrPending {
			log.Info("Member cluster unusable", "reason", err.Reason, "err", err.Error())
		}
		return true
	}
	old := b.cluster
	b.cluster, b.err, b.since = c, nil, m.cfg.Clock.Now()
	m.releaseSecretGoneLocked(mesh, b)
	if old != nil {
		if !m.holdLocked(HoldKey{Mesh: mesh, UID: b.uid, Entry: b.name, Why: HoldDeparted}, old, b.spec.local, true) {
			m.releaseClusterLocked(mesh, old)
		}
		log.Info("Member cluster connection replaced", "old", old.name(), "new", c.name())
	} else {
		log.V(2).Info("Member cluster connection set", "connection", c.name())
	}
	return true
}

// kubeconfigLocked reads and validates the kubeconfig of a Secret binding,
// and checks its server against the namespace's server policy. The
// identity of the result includes the policy, so that meshes share a
// connection only when they are allowed the same servers.
func (m *Manager) kubeconfigLocked(b *binding) (*rest.Config, []netip.Prefix, clusterID, *memberaccess.Error) {
	data, e := m.secrets[b.secret].kubeconfig(b.spec.key)
	if e != nil {
		return nil, nil, "", e
	}
	field := fmt.Sprintf("Secret %s key %q", b.secret, b.spec.key)
	cfg, err := memberaccess.ParseKubeconfig(data, m.cfg.AllowInsecureSkipTLSVerify)
	if err != nil {
		var pe *memberaccess.Error
		if !errors.As(err, &pe) {
			return nil, nil, "", newError(memberaccess.ErrKubeconfigInvalid, field, err.Error())
		}
		if pe.Field != "" {
			field += ": " + pe.Field
		}
		return nil, nil, "", newError(pe.Reason, field, pe.Message)
	}
	if !memberaccess.PolicySynced(m.cfg.ServerPolicy) {
		return nil, nil, "", newError(memberaccess.ErrPending, field, "waiting for the server policy of member API servers (the grants) to be read")
	}
	allowed := m.cfg.ServerPolicy.AllowedServers(b.secret.Namespace)
	if err := checkServerLiteral(cfg.Host, allowed); err != nil {
		return nil, nil, "", newError(memberaccess.ErrServerNotAllowed, field, err.Message)
	}
	cfg.QPS, cfg.Burst = m.cfg.QPS, m.cfg.Burst
	return cfg, allowed, m.hasher.id(cfg, canonicalPolicy(allowed)), nil
}

// acquireClusterLocked takes a reference on the cluster of id, building it
// when it is new; allowed is nil for the local cluster and the server
// policy of a remote one.
func (m *Manager) acquireClusterLocked(mesh types.NamespacedName, id clusterID, cfg *rest.Config, allowed []netip.Prefix) (*cluster, *memberaccess.Error) {
	c := m.clusters[id]
	if c == nil {
		var err error
		c, err = newCluster(id, cfg, clusterOptions{
			probeInterval:  m.cfg.ProbeInterval,
			probeTimeout:   m.cfg.ProbeTimeout,
			clock:          m.cfg.Clock,
			maxNodes:       m.cfg.MaxNodes,
			maxPeers:       m.cfg.MaxPeers,
			maxCacheBytes:  m.cfg.MaxCacheBytes,
			shared:         m.shared,
			interned:       m.interned,
			onChange:       m.clusterChanged,
			isOwnPeerWrite: m.isOwnPeerWrite,
			localUID:       m.localSystemUID,
			servicesWanted: m.servicesWanted, isOwnServicesWrite: m.isOwnServicesWrite, maxServiceExports: m.cfg.MaxServiceExports, maxEndpointsPerService: m.cfg.MaxEndpointsPerService,
		}, id != localID, allowed)
		if err != nil {
			return nil, newError(memberaccess.ErrKubeconfigInvalid, "", fmt.Sprintf("cannot build a client: %v", err))
		}
		m.clusters[id] = c
	}
	c.refs++
	c.meshes[mesh]++
	// Charged before its first list, which the namespace's share bounds.
	if c.budget != nil {
		c.budget.shared.use(c.budget, mesh.Namespace)
	}
	if c.refs == 1 && m.ctx != nil && !m.stopped {
		c.start(m.ctx, &m.wg)
	}
	return c, nil
}

func (m *Manager) releaseClusterLocked(mesh types.NamespacedName, c *cluster) {
	c.refs--
	if c.meshes[mesh]--; c.meshes[mesh] <= 0 {
		delete(c.meshes, mesh)
	}
	if c.budget != nil {
		c.budget.shared.release(c.budget, mesh.Namespace)
	}
	if c.refs == 0 {
		delete(m.clusters, c.id)
		c.stop()
	}
}

// releaseSecretGoneLocked drops the connection held since b's Secret went
// away.
func (m *Manager) releaseSecretGoneLocked(mesh types.NamespacedName, b *binding) {
	key := b.secretGone(mesh)
	if h := m.holds.byKey[key]; h != nil {
		m.releaseHoldLocked(key, h)
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
			sw.start(m.ctx, &m.wg)
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
