package clusters

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// Questions about the member clusters as a whole, answered from what the
// Manager holds, without I/O: which physical cluster each mesh entry
// reaches (for admission and for the overlap of meshes), and every
// connection (for the removal of what meshes that are gone wrote).

// Identities returns the verified identity of each cluster of mesh, by
// spec cluster name, as followed; "" where it is not known.
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

// Connections returns every connection the Manager holds now, local and
// remote, sorted by name. A connection is used by the meshes that hold
// it; Connections is for work on the clusters themselves, such as removing
// what meshes that no longer exist wrote there.
func (m *Manager) Connections() []Member {
	m.mu.RLock()
	clusters := make([]*cluster, 0, len(m.clusters))
	for _, c := range m.clusters {
		clusters = append(clusters, c)
	}
	m.mu.RUnlock()
	out := make([]Member, 0, len(clusters))
	for _, c := range clusters {
		out = append(out, newMember("", c.id == localID, c, nil, nil))
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name(), b.Name()) })
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
