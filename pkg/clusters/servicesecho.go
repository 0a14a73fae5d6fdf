package clusters

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServicesEchoFilter reports whether an object added or updated in the
// services caches of connection (ServicesClient.Connection) is exactly
// what a write of the caller's own left there: kind (ServiceImport,
// Service, EndpointSlice, ServiceExport), namespace, name and the
// resourceVersion the write answered with. It is called from the
// informers and must not block.
type ServicesEchoFilter func(connection, kind string, obj metav1.Object) bool

// SetServicesEchoFilter keeps the echoes of the caller's own services
// writes from the change handlers, as SetEchoFilter does for Peers.
func (m *Manager) SetServicesEchoFilter(f ServicesEchoFilter) {
	m.svcEcho.Store(&f)
}

func (m *Manager) isServicesEcho(c *cluster, kind string, obj metav1.Object) bool {
	f := m.svcEcho.Load()
	return f != nil && (*f)(c.name(), kind, obj)
}

// kindOf names the kind of a services cache's objects.
var kindOf = map[string]string{
	resourceServiceImports:        "ServiceImport",
	resourceServiceExports:        "ServiceExport",
	resourceWrittenServices:       "Service",
	resourceExportedServices:      "Service",
	resourceWrittenEndpointSlices: "EndpointSlice",
}

// servicesEcho asks the filter about an object of a services cache.
func (c *cluster) servicesEcho(resource, event string, obj any) bool {
	kind, ok := kindOf[resource]
	o, isObject := obj.(metav1.Object)
	if !ok || !isObject || event == "delete" || c.opts.isServicesEcho == nil {
		return false
	}
	return c.opts.isServicesEcho(c, kind, o)
}
