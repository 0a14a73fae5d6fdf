package clusters

import (
	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// EchoFilter reports whether a Peer added or updated in the cache of
// connection (PeerClient.Connection) is exactly what a write of the
// caller's own left there: the object at the resourceVersion the write
// answered with. It is called from the informers and must not block.
type EchoFilter func(connection string, peer *kilov1alpha1.Peer) bool

// SetEchoFilter makes the Manager keep the echoes of the caller's own
// Peer writes from the change handlers: such an event tells the writer
// nothing its write's answer did not, and handling it would cost a whole
// reconcile pass of the mesh per write, ahead of the next real change.
// The filter is told of every echo and does what it needs with it (the
// reconciler lets the plan cache know the cache moved on).
func (m *Manager) SetEchoFilter(f EchoFilter) {
	m.echo.Store(&f)
}

// isEcho asks the filter about a Peer in c's cache.
func (m *Manager) isEcho(c *cluster, p *kilov1alpha1.Peer) bool {
	f := m.echo.Load()
	return f != nil && (*f)(c.name(), p)
}
