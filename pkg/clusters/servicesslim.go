package clusters

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// What the services caches keep of each object: what the services
// computation reads (pkg/planner/services), without managed fields or
// kubectl's last-applied copy, which would double the weight of every
// object a user applied.

// slimMeta is the metadata the services computation and the reconciler
// read of an object.
func slimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
		Labels:            m.Labels,
		Annotations:       withoutLastApplied(m.Annotations),
		OwnerReferences:   m.OwnerReferences,
	}
}

// weight is what obj costs in the cache: its protobuf size when it has
// one, else its JSON size (the mcs-api types are CRDs, without protobuf).
func weight(obj runtime.Object) int64 {
	if s, ok := obj.(interface{ Size() int }); ok {
		return int64(objectOverhead + s.Size())
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return objectOverhead
	}
	return int64(objectOverhead + len(b))
}

// slimNamespace keeps a Namespace's name: the computation only asks
// whether a namespace exists.
func slimNamespace(n *corev1.Namespace) (*corev1.Namespace, int64) {
	out := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion}}
	return out, int64(objectOverhead + len(n.Name) + len(n.UID) + len(n.ResourceVersion))
}

func slimServiceExport(e *mcsv1beta1.ServiceExport) (*mcsv1beta1.ServiceExport, int64) {
	out := &mcsv1beta1.ServiceExport{ObjectMeta: slimMeta(&e.ObjectMeta), Spec: e.Spec, Status: e.Status}
	return out, weight(out)
}

func slimServiceImport(i *mcsv1beta1.ServiceImport) (*mcsv1beta1.ServiceImport, int64) {
	out := &mcsv1beta1.ServiceImport{ObjectMeta: slimMeta(&i.ObjectMeta), Spec: i.Spec, Status: i.Status}
	return out, weight(out)
}

// slimService keeps the spec (type, ports, affinity, policies, IPs) and
// identity; its status (load balancer ingress) is not read.
func slimService(s *corev1.Service) (*corev1.Service, int64) {
	out := &corev1.Service{ObjectMeta: slimMeta(&s.ObjectMeta), Spec: s.Spec}
	return out, weight(out)
}

// slimEndpointSlice keeps each endpoint's addresses, conditions, hostname
// and zone: node names and target references stay in their cluster.
func slimEndpointSlice(s *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, int64) {
	out := &discoveryv1.EndpointSlice{ObjectMeta: slimMeta(&s.ObjectMeta), AddressType: s.AddressType, Ports: s.Ports,
		Endpoints: make([]discoveryv1.Endpoint, len(s.Endpoints))}
	for i, e := range s.Endpoints {
		out.Endpoints[i] = discoveryv1.Endpoint{Addresses: e.Addresses, Conditions: e.Conditions, Hostname: e.Hostname, Zone: e.Zone}
	}
	return out, weight(out)
}
