package services

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// TestConformanceBehaviours covers what the mcs-api conformance suite
// (conformance/service_import.go) marks Required, on the computation.
func TestConformanceBehaviours(t *testing.T) {
	v4 := discoveryv1.AddressTypeIPv4
	cartSlice := func(cluster string, addrs ...string) *discoveryv1.EndpointSlice {
		var eps []ep
		for _, a := range addrs {
			eps = append(eps, ep{a, true})
		}
		return controllerSlice("shop", "cart", "cart-"+cluster, v4, eps...)
	}
	twoClusters := func(svcA, svcB *corev1.Service, ageA, ageB int64) *Input {
		return newInput(
			member("a", "shop").with(exportOf("shop", "cart", ageA), svcA, cartSlice("a", "10.1.0.5")),
			member("b", "shop").with(exportOf("shop", "cart", ageB), svcB, cartSlice("b", "10.2.0.5")),
		)
	}
	conflicted := func(t *testing.T, out *Output, want string) {
		t.Helper()
		for _, cl := range []string{"a", "b"} {
			c := condition(exportResult(t, out, cl, "shop", "cart").Conditions, "Conflict")
			if c.Status != metav1.ConditionTrue || !slices.Contains(strings.Split(c.Reason, ","), want) {
				t.Errorf("export in %s: Conflict %s %s, want True with %s", cl, c.Status, c.Reason, want)
			}
		}
	}
	ports := func(t *testing.T, imp *Import, want ...mcsv1beta1.ServicePort) {
		t.Helper()
		if imp == nil || imp.ServiceImport == nil {
			t.Fatal("no import")
		}
		if !apiequality.Semantic.DeepEqual(imp.ServiceImport.Spec.Ports, want) {
			t.Errorf("import ports %+v, want %+v", imp.ServiceImport.Spec.Ports, want)
		}
	}
	http80 := mcsv1beta1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}
	for _, tc := range []struct {
		name  string
		in    *Input
		check func(t *testing.T, out *Output)
	}{
		{"a ClusterIP export is imported as ClusterSetIP in every cluster, the exporter included", newInput(
			member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart"), cartSlice("a", "10.1.0.5")),
			member("b", "shop"), member("c", "shop", "other"),
		), func(t *testing.T, out *Output) {
			for _, cl := range []string{"a", "b", "c"} {
				imp := importIn(t, out, cl, "shop", "cart")
				if imp == nil || imp.ServiceImport == nil || imp.ServiceImport.Spec.Type != mcsv1beta1.ClusterSetIP {
					t.Fatalf("cluster %s: import %+v, want a ClusterSetIP ServiceImport", cl, imp)
				}
				if got := imp.ServiceImport.Status.Clusters; len(got) != 1 || got[0].Cluster != "a" {
					t.Errorf("cluster %s: status.clusters %v, want [a]", cl, got)
				}
				if imp.DerivedService == nil || len(imp.DerivedService.Spec.Selector) != 0 || imp.DerivedService.Name != DerivedServiceName("shop", "cart") {
					t.Errorf("cluster %s: derived Service %+v, want a selector-less %s", cl, imp.DerivedService, DerivedServiceName("shop", "cart"))
				}
				if a := imp.ServiceImport.Annotations[AnnotationDerivedService]; a != imp.DerivedService.Name {
					t.Errorf("cluster %s: the import's %s annotation is %q", cl, AnnotationDerivedService, a)
				}
				if got := addresses(imp.EndpointSlices); !slices.Equal(got, []string{"10.1.0.5"}) {
					t.Errorf("cluster %s: endpoints %v", cl, got)
				}
				for _, es := range imp.EndpointSlices {
					if es.Labels[mcsv1beta1.LabelServiceName] != "cart" || es.Labels[mcsv1beta1.LabelSourceCluster] != "a" ||
						es.Labels[discoveryv1.LabelServiceName] != imp.DerivedService.Name || es.Labels[discoveryv1.LabelManagedBy] == "endpointslice-controller.k8s.io" {
						t.Errorf("cluster %s: slice labels %v", cl, es.Labels)
					}
				}
			}
			r := exportResult(t, out, "a", "shop", "cart")
			for typ, reason := range map[string]string{"Valid": "Valid", "Ready": "Exported", "Conflict": "NoConflicts"} {
				if c := condition(r.Conditions, typ); c.Reason != reason || c.LastTransitionTime.Time != now {
					t.Errorf("condition %s: %+v, want reason %s at the input's time", typ, c, reason)
				}
			}
		}},
		{"an import lasts while one export does: a's unexport leaves b's endpoints and removes a's", func() *Input {
			in := twoClusters(svcOf("shop", "cart"), svcOf("shop", "cart"), 0, 10)
			in = written(in, Compute(in))
			in.Clusters[0].Exports = nil
			return in
		}(), func(t *testing.T, out *Output) {
			for _, co := range out.Clusters {
				imp := importIn(t, out, co.Name, "shop", "cart")
				if imp == nil || imp.ServiceImport == nil {
					t.Fatalf("%s: no import while b still exports", co.Name)
				}
				if got := imp.ServiceImport.Status.Clusters; len(got) != 1 || got[0].Cluster != "b" {
					t.Errorf("%s: status.clusters %v, want [b]", co.Name, got)
				}
				if got := addresses(imp.EndpointSlices); !slices.Equal(got, []string{"10.2.0.5"}) {
					t.Errorf("%s: endpoints %v, want b's only", co.Name, got)
				}
				if len(co.Delete.Imports)+len(co.Delete.Services) != 0 || len(co.Delete.EndpointSlices) != 1 {
					t.Errorf("%s: deletes %+v, want a's slice only", co.Name, co.Delete)
				}
			}
		}},
		{"a headless export is imported as Headless, with no IP and no derived Service", newInput(
			member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart", headless), cartSlice("a", "10.1.0.5")),
			member("b", "shop"),
		), func(t *testing.T, out *Output) {
			imp := importIn(t, out, "b", "shop", "cart")
			if imp == nil || imp.ServiceImport.Spec.Type != mcsv1beta1.Headless || len(imp.ServiceImport.Spec.IPs) != 0 || imp.DerivedService != nil {
				t.Fatalf("import %+v, want Headless without IPs or derived Service", imp)
			}
			if len(imp.EndpointSlices) != 1 || imp.EndpointSlices[0].Labels[discoveryv1.LabelServiceName] != "" {
				t.Errorf("a headless import's slices must name no Service (it would join the exporter's own): %+v", imp.EndpointSlices)
			}
			if c := condition(imp.ServiceImport.Status.Conditions, "Ready"); c.Status != metav1.ConditionTrue {
				t.Errorf("Ready %+v", c)
			}
		}},
		{"a ClusterSetIP import takes one IP per family from its derived Service", func() *Input {
			dual := func(s *corev1.Service) {
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
				p := corev1.IPFamilyPolicyRequireDualStack
				s.Spec.IPFamilyPolicy = &p
			}
			in := newInput(member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart", dual)), member("b", "shop"))
			derived := Compute(in).Clusters[1].Imports[0].DerivedService.DeepCopy()
			derived.Spec.ClusterIP, derived.Spec.ClusterIPs = "10.97.0.1", []string{"10.97.0.1", "fd00:97::1"}
			in.Clusters[1] = in.Clusters[1].with(derived)
			return in
		}(), func(t *testing.T, out *Output) {
			a, b := importIn(t, out, "a", "shop", "cart"), importIn(t, out, "b", "shop", "cart")
			if fams := b.ServiceImport.Spec.IPFamilies; !slices.Equal(b.ServiceImport.Spec.IPs, []string{"10.97.0.1", "fd00:97::1"}) || len(fams) != 2 || fams[0] != corev1.IPv4Protocol {
				t.Errorf("b: ips %v families %v, want one per family in order", b.ServiceImport.Spec.IPs, fams)
			}
			if c := condition(b.ServiceImport.Status.Conditions, "Ready"); c.Status != metav1.ConditionTrue {
				t.Errorf("b: Ready %+v", c)
			}
			if len(a.ServiceImport.Spec.IPs) != 0 || condition(a.ServiceImport.Status.Conditions, "Ready").Reason != "Pending" {
				t.Errorf("a: no derived Service allocated yet, want no IPs and Ready Pending: %+v", a.ServiceImport)
			}
			if p := a.DerivedService.Spec.IPFamilyPolicy; p == nil || *p != corev1.IPFamilyPolicyRequireDualStack {
				t.Errorf("the derived Service's family policy %v", p)
			}
		}},
		{"the import's ports are the exported Service's", newInput(
			member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart", withPorts(
				corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80},
				corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}))),
			member("b", "shop"),
		), func(t *testing.T, out *Output) {
			imp := importIn(t, out, "b", "shop", "cart")
			ports(t, imp, mcsv1beta1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}, http80)
			if len(imp.DerivedService.Spec.Ports) != 2 {
				t.Errorf("derived ports %+v", imp.DerivedService.Spec.Ports)
			}
		}},
		{"session affinity and its config are the exported Service's", newInput(
			member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart", func(s *corev1.Service) {
				timeout := int32(300)
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
			})), member("b", "shop"),
		), func(t *testing.T, out *Output) {
			imp := importIn(t, out, "b", "shop", "cart")
			spec := imp.ServiceImport.Spec
			if spec.SessionAffinity != corev1.ServiceAffinityClientIP || spec.SessionAffinityConfig == nil || *spec.SessionAffinityConfig.ClientIP.TimeoutSeconds != 300 {
				t.Errorf("import affinity %v %+v", spec.SessionAffinity, spec.SessionAffinityConfig)
			}
			if imp.DerivedService.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || imp.DerivedService.Spec.SessionAffinityConfig == nil {
				t.Errorf("derived Service affinity %+v", imp.DerivedService.Spec)
			}
		}},
		{"internal traffic policy and traffic distribution are the exported Service's", newInput(
			member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart", func(s *corev1.Service) {
				local, close := corev1.ServiceInternalTrafficPolicyLocal, corev1.ServiceTrafficDistributionPreferClose
				s.Spec.InternalTrafficPolicy, s.Spec.TrafficDistribution = &local, &close
			})), member("b", "shop"),
		), func(t *testing.T, out *Output) {
			imp := importIn(t, out, "b", "shop", "cart")
			spec := imp.ServiceImport.Spec
			if deref(spec.InternalTrafficPolicy) != corev1.ServiceInternalTrafficPolicyLocal || deref(spec.TrafficDistribution) != corev1.ServiceTrafficDistributionPreferClose {
				t.Errorf("import policy %v distribution %v", deref(spec.InternalTrafficPolicy), deref(spec.TrafficDistribution))
			}
			if deref(imp.DerivedService.Spec.InternalTrafficPolicy) != corev1.ServiceInternalTrafficPolicyLocal || deref(imp.DerivedService.Spec.TrafficDistribution) != corev1.ServiceTrafficDistributionPreferClose {
				t.Errorf("derived Service %+v", imp.DerivedService.Spec)
			}
		}},
		{"two exports with different port sets: the union, and a PortConflict on each", twoClusters(
			svcOf("shop", "cart"),
			svcOf("shop", "cart", withPorts(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80},
				corev1.ServicePort{Name: "stcp", Protocol: corev1.ProtocolSCTP, Port: 142})), 0, 10,
		), func(t *testing.T, out *Output) {
			conflicted(t, out, "PortConflict")
			ports(t, importIn(t, out, "a", "shop", "cart"), http80, mcsv1beta1.ServicePort{Name: "stcp", Protocol: corev1.ProtocolSCTP, Port: 142})
			if got := addresses(importIn(t, out, "a", "shop", "cart").EndpointSlices); !slices.Equal(got, []string{"10.1.0.5", "10.2.0.5"}) {
				t.Errorf("endpoints of both exporters, got %v", got)
			}
		}},
		{"conflicting ports: the oldest export's port wins", twoClusters(
			svcOf("shop", "cart"), svcOf("shop", "cart", withPorts(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 81})), 10, 0,
		), func(t *testing.T, out *Output) {
			conflicted(t, out, "PortConflict")
			ports(t, importIn(t, out, "a", "shop", "cart"), mcsv1beta1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 81})
		}},
		{"conflicting types: the oldest export's type wins", twoClusters(
			svcOf("shop", "cart"), svcOf("shop", "cart", headless), 0, 10,
		), func(t *testing.T, out *Output) {
			conflicted(t, out, "TypeConflict")
			for _, cl := range []string{"a", "b"} {
				if imp := importIn(t, out, cl, "shop", "cart"); imp.ServiceImport.Spec.Type != mcsv1beta1.ClusterSetIP {
					t.Errorf("%s: type %s, want ClusterSetIP", cl, imp.ServiceImport.Spec.Type)
				}
			}
			if c := condition(exportResult(t, out, "b", "shop", "cart").Conditions, "Conflict"); !strings.Contains(c.Message, "cluster a") {
				t.Errorf("the message says which export decides: %s", c.Message)
			}
		}},
		{"an ExternalName Service is not valid and imported nowhere", newInput(
			member("a", "shop").with(exportOf("shop", "cart", 0), svcOf("shop", "cart", func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ServiceTypeExternalName, "example.com", "", nil
			})), member("b", "shop"),
		), func(t *testing.T, out *Output) {
			r := exportResult(t, out, "a", "shop", "cart")
			if c := condition(r.Conditions, "Valid"); c.Status != metav1.ConditionFalse || c.Reason != "InvalidServiceType" {
				t.Errorf("Valid %+v", c)
			}
			if c := condition(r.Conditions, "Ready"); c.Status != metav1.ConditionFalse {
				t.Errorf("Ready %+v", c)
			}
			for _, cl := range []string{"a", "b"} {
				if imp := importIn(t, out, cl, "shop", "cart"); imp != nil {
					t.Errorf("%s: import %+v", cl, imp)
				}
			}
		}},
		{"an export without its Service is not valid", newInput(
			member("a", "shop").with(exportOf("shop", "cart", 0)), member("b", "shop"),
		), func(t *testing.T, out *Output) {
			if c := condition(exportResult(t, out, "a", "shop", "cart").Conditions, "Valid"); c.Status != metav1.ConditionFalse || c.Reason != "NoService" {
				t.Errorf("Valid %+v", c)
			}
			if imp := importIn(t, out, "b", "shop", "cart"); imp != nil {
				t.Errorf("import %+v", imp)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, Compute(tc.in)) })
	}
}
