package clusters

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// OwnWrites recognises the caller's own writes in the caches: whether an
// object added or updated in the caches of connection (Member.Name) is
// exactly what a write of the caller's left there, at the resourceVersion
// the write answered with. Such an event tells the writer nothing its
// write's answer did not, and handling it would cost a whole pass of the
// mesh per write, ahead of the next real change. It is told of every such
// event and does what it needs with it (the reconciler lets the plan cache
// know the cache moved on). It is called from the informers and must not
// block.
type OwnWrites interface {
	// Peer asks about a Peer.
	Peer(connection string, peer *kilov1alpha1.Peer) bool
	// Services asks about a services object of kind ServiceImport,
	// Service, EndpointSlice or ServiceExport.
	Services(connection, kind string, obj metav1.Object) bool
}

// IgnoreOwnWrites keeps the caller's own writes, as f recognises them,
// from the change handlers.
func (m *Manager) IgnoreOwnWrites(f OwnWrites) {
	m.own.Store(&f)
}

// isOwnPeerWrite asks about a Peer in c's cache.
func (m *Manager) isOwnPeerWrite(c *cluster, p *kilov1alpha1.Peer) bool {
	f := m.own.Load()
	return f != nil && (*f).Peer(c.name(), p)
}

func (m *Manager) isOwnServicesWrite(c *cluster, kind string, obj metav1.Object) bool {
	f := m.own.Load()
	return f != nil && (*f).Services(c.name(), kind, obj)
}

// kindOf names the kind of a services cache's objects.
var kindOf = map[string]string{
	resourceServiceImports:        "ServiceImport",
	resourceServiceExports:        "ServiceExport",
	resourceWrittenServices:       "Service",
	resourceExportedServices:      "Service",
	resourceWrittenEndpointSlices: "EndpointSlice",
}

// ownServicesWrite asks about an object of a services cache.
func (c *cluster) ownServicesWrite(resource, event string, obj any) bool {
	kind, ok := kindOf[resource]
	o, isObject := obj.(metav1.Object)
	if !ok || !isObject || event == "delete" || c.opts.isOwnServicesWrite == nil {
		return false
	}
	return c.opts.isOwnServicesWrite(c, kind, o)
}
