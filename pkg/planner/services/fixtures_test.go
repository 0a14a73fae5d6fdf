package services

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Fixtures are objects as the member API servers hold them: Services
// defaulted as the API server defaults them, EndpointSlices as the
// endpointslice controller writes them.

var (
	now     = time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	podCIDR = map[string]string{"a": "10.1.0.0/16", "b": "10.2.0.0/16", "c": "10.3.0.0/16"}
)

func newInput(clusters ...Cluster) *Input {
	return &Input{MeshNamespace: "tenant", MeshName: "prod", MeshUID: "uid-1", Now: now, Clusters: clusters}
}

// member is a reachable cluster with the namespaces given.
func member(name string, namespaces ...string) Cluster {
	return Cluster{Name: name, Reachable: true, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(podCIDR[name])}, Namespaces: namespaces}
}

// with adds objects to a copy of the cluster; the lists of c are not changed.
func (c Cluster) with(objs ...any) Cluster {
	for _, o := range objs {
		switch o := o.(type) {
		case *mcsv1beta1.ServiceExport:
			c.Exports = append(slices.Clip(c.Exports), o)
		case *corev1.Service:
			c.Services = append(slices.Clip(c.Services), o)
		case *discoveryv1.EndpointSlice:
			c.EndpointSlices = append(slices.Clip(c.EndpointSlices), o)
		case *mcsv1beta1.ServiceImport:
			c.Imports = append(slices.Clip(c.Imports), o)
		default:
			panic("unexpected fixture")
		}
	}
	return c
}

// exportOf is a ServiceExport created age seconds after a fixed instant.
func exportOf(ns, name string, age int64) *mcsv1beta1.ServiceExport {
	return &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1,
		CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000+age, 0))}}
}

// svcOf is a defaulted single-stack ClusterIP Service with port http/80.
func svcOf(ns, name string, mutate ...func(*corev1.Service)) *corev1.Service {
	cluster := corev1.ServiceInternalTrafficPolicyCluster
	single := corev1.IPFamilyPolicySingleStack
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
			Selector:              map[string]string{"app": name},
			SessionAffinity:       corev1.ServiceAffinityNone,
			IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy:        &single,
			InternalTrafficPolicy: &cluster,
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func headless(s *corev1.Service) {
	s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
}

func withPorts(ports ...corev1.ServicePort) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Spec.Ports = ports }
}

type ep struct {
	addr  string
	ready bool
}

// controllerSlice is an EndpointSlice of an exported Service as the
// endpointslice controller writes it, with target port http/8080.
func controllerSlice(ns, svc, name string, t discoveryv1.AddressType, eps ...ep) *discoveryv1.EndpointSlice {
	port, portName, proto := int32(8080), "http", corev1.ProtocolTCP
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: t,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Protocol: &proto, Port: &port}},
	}
	for _, e := range eps {
		ready, node := e.ready, "node-1"
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.addr},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &node})
	}
	return s
}

// importIn finds the import of ns/name in a cluster's output.
func importIn(t *testing.T, out *Output, cluster, ns, name string) *Import {
	t.Helper()
	for _, co := range out.Clusters {
		if co.Name != cluster {
			continue
		}
		for i := range co.Imports {
			if co.Imports[i].Namespace == ns && co.Imports[i].Name == name {
				return &co.Imports[i]
			}
		}
	}
	return nil
}

func exportResult(t *testing.T, out *Output, cluster, ns, name string) ExportResult {
	t.Helper()
	for _, r := range out.Exports {
		if r.Cluster == cluster && r.Namespace == ns && r.Name == name {
			return r
		}
	}
	t.Fatalf("no export result for %s/%s in %s", ns, name, cluster)
	return ExportResult{}
}

func condition(conds []metav1.Condition, t string) metav1.Condition {
	for _, c := range conds {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}

// addresses are the addresses of every endpoint in the slices.
func addresses(slices []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range slices {
		for _, e := range s.Endpoints {
			out = append(out, e.Addresses...)
		}
	}
	return out
}
