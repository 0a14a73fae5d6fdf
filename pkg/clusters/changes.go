package clusters

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

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

// changed reports a change of the cluster's caches, unless it is the echo
// of the Manager's user's own Peer write; the debug trace names the
// object, to tell which event started a reconcile.
func (c *cluster) changed(resource, event string, obj any) {
	p, isPeer := obj.(*kilov1alpha1.Peer)
	own := (isPeer && event != "delete" && c.opts.isOwnPeerWrite != nil && c.opts.isOwnPeerWrite(c, p)) || c.ownServicesWrite(resource, event, obj)
	if logger := klog.Background().V(5); logger.Enabled() {
		key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		logger.Info("Member cache change", "cluster", c.name(), "resource", resource, "event", event, "object", key, "ownWrite", own)
	}
	if !own {
		c.opts.onChange(c)
	}
}
