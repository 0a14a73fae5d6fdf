package clusters

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// Questions about the member clusters as a whole, answered from what the
// Manager holds, without I/O: which physical cluster each mesh entry
// reaches (for admission and for the overlap of meshes), and every
// connection with its Peers (for the removal of Peers whose mesh is gone).

// Identities returns the verified identity of each cluster of mesh, by
// spec cluster name, as ensured; "" where it is not known.
func (m *Manager) Identities(mesh *meshv1alpha1.ClusterMesh) map[string]string {
	m.mu.RLock()
	ms := m.meshes[types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}]
	clusters := map[string]*cluster{}
	if ms != nil {
		for name, b := range ms.bindings {
			if b.cluster != nil {
				clusters[name] = b.cluster
			}
		}
	}
	m.mu.RUnlock()
	out := make(map[string]string, len(mesh.Spec.Clusters))
	for i := range mesh.Spec.Clusters {
		name := mesh.Spec.Clusters[i].Name
		if c := clusters[name]; c != nil {
			out[name] = c.health.view().identity
		} else {
			out[name] = ""
		}
	}
	return out
}

// ServerIdentities returns the verified identities of the connections to
// server (a ServerIdentity) that meshes hold now, whatever their
// credentials; LocalIdentity is the local cluster's.
func (m *Manager) ServerIdentities(server string) []string {
	m.mu.RLock()
	var found []*cluster
	for _, c := range m.clusters {
		if c.id != localID && c.server == server {
			found = append(found, c)
		}
	}
	m.mu.RUnlock()
	var out []string
	for _, c := range found {
		if id := c.health.view().identity; id != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// LocalIdentity is the verified identity of the local cluster, "" when no
// mesh uses it yet or it is not read yet.
func (m *Manager) LocalIdentity() string {
	m.mu.RLock()
	c := m.clusters[localID]
	m.mu.RUnlock()
	if c == nil {
		return ""
	}
	return c.health.view().identity
}

// CachedKubeconfig is the data under key of a kubeconfig Secret as the
// Secret watches of stored meshes hold it, for admission to read without a
// request: known is false when no stored mesh references the Secret or it
// is not read yet; data is nil when the Secret or its key does not exist.
func (m *Manager) CachedKubeconfig(secret types.NamespacedName, key string) (data []byte, known bool) {
	m.mu.RLock()
	sw := m.secrets[secret]
	m.mu.RUnlock()
	if sw == nil {
		return nil, false
	}
	data, err := sw.kubeconfig(key)
	switch {
	case err == nil:
		return data, true
	case err.Reason == memberaccess.ErrSecretNotFound || err.Reason == memberaccess.ErrSecretKeyNotFound:
		return nil, true
	default:
		return nil, false
	}
}

// Connection is one connection to a member cluster that the Manager holds
// for some meshes, with what its caches hold.
type Connection struct {
	// Name identifies the connection in logs, without credentials.
	Name string
	// Synced: Peers holds every Peer of the cluster (which is never so for
	// a cluster over a limit of the caches).
	Synced bool
	// Peers are the cache's own objects: read them, never modify them.
	Peers []*kilov1alpha1.Peer
	// Client writes Peers through this connection.
	Client PeerClient
}

// Connections returns every connection the Manager holds now, local and
// remote. A connection is used by the meshes that hold it; Connections is
// for work on the clusters themselves, such as removing Peers whose mesh
// no longer exists.
func (m *Manager) Connections() []Connection {
	m.mu.RLock()
	clusters := make([]*cluster, 0, len(m.clusters))
	for _, c := range m.clusters {
		clusters = append(clusters, c)
	}
	m.mu.RUnlock()
	out := make([]Connection, 0, len(clusters))
	for _, c := range clusters {
		st := c.state()
		conn := Connection{Name: c.name(), Synced: st.Synced && st.PeerCRD, Client: &peerClient{c: c}}
		if conn.Synced {
			conn.Peers = st.Peers
		}
		out = append(out, conn)
	}
	slices.SortFunc(out, func(a, b Connection) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ServerPolicyChanged applies the ServerPolicy's current answers for the
// meshes of namespaces (all when none is given): their kubeconfigs are
// checked again, and a mesh whose namespace is now allowed other servers
// gets a connection under the new policy (or the reason it has none) in
// place of the old one.
func (m *Manager) ServerPolicyChanged(namespaces ...string) {
	var affected []types.NamespacedName
	m.mu.Lock()
	for key, ms := range m.meshes {
		if len(namespaces) > 0 && !slices.Contains(namespaces, key.Namespace) {
			continue
		}
		for _, b := range ms.bindings {
			if b.secret != (types.NamespacedName{}) && m.resolveLocked(key, b) {
				affected = append(affected, key)
			}
		}
	}
	m.mu.Unlock()
	for _, k := range affected {
		m.queue.Add(k)
	}
}

// connection is the connection mesh uses now for its entry cluster (for a
// deleted mesh whose Secret is gone, the one the Secret last named), or
// why there is none.
func (m *Manager) connection(mesh *meshv1alpha1.ClusterMesh, cluster string) (*cluster, error) {
	m.mu.RLock()
	var b binding
	ms := m.meshes[types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}]
	if ms != nil && ms.bindings[cluster] != nil {
		b = *ms.bindings[cluster]
	}
	conn := b.forCleanup(mesh)
	m.mu.RUnlock()

	var entry *meshv1alpha1.ClusterEntry
	for i := range mesh.Spec.Clusters {
		if mesh.Spec.Clusters[i].Name == cluster {
			entry = &mesh.Spec.Clusters[i]
		}
	}
	switch {
	case entry == nil:
		return nil, newError(memberaccess.ErrUnknownCluster, "", fmt.Sprintf("mesh %s/%s has no cluster %q", mesh.Namespace, mesh.Name, cluster))
	case b.name == "" || b.spec != specOf(entry):
		return nil, newError(memberaccess.ErrPending, "", fmt.Sprintf("cluster %q of mesh %s/%s is not ensured yet", cluster, mesh.Namespace, mesh.Name))
	case conn == nil:
		return nil, b.err
	}
	return conn, nil
}
