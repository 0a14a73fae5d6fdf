package clusters

import "k8s.io/apimachinery/pkg/types"

// AddChangeHandler registers f to be called with the key of every mesh
// affected when a Node or Peer of one of its clusters changes (beyond
// fields the caches drop, and but for the user's own writes: see
// IgnoreOwnWrites), a cluster's caches sync, its reachability, Peer
// CRD or error changes, or its Secret changes what the mesh connects to.
// Calls come one at a time from one goroutine, never from informers; keys
// are de-duplicated while waiting, so f should be quick (enqueue and return).
func (m *Manager) AddChangeHandler(f func(types.NamespacedName)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers = append(m.handlers, f)
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
		known = known || m.heldMeshLocked(key)
		m.mu.RUnlock()
		if known {
			for _, h := range handlers {
				h(key)
			}
		}
		m.queue.Done(key)
	}
}
