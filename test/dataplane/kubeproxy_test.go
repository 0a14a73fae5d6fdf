package dataplane

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProxyRules(t *testing.T) {
	svc := func(ns, name, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
			ClusterIP: ip, Ports: []corev1.ServicePort{{Name: "tcp", Port: 80, Protocol: corev1.ProtocolTCP}},
		}}
	}
	ready, unready := true, false
	slice := func(ns, service, portName string, port int32, family discoveryv1.AddressType, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: service + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
			AddressType: family,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
			Endpoints:   eps,
		}
	}
	ep := func(addr string, r *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: r}}
	}
	v4 := discoveryv1.AddressTypeIPv4
	cases := []struct {
		name   string
		svcs   []*corev1.Service
		slices []*discoveryv1.EndpointSlice
		want   map[string]ProxyRules
	}{{
		name:   "ready and unknown endpoints, sorted; unready ones left out",
		svcs:   []*corev1.Service{svc("shop", "derived-a", "10.97.0.5")},
		slices: []*discoveryv1.EndpointSlice{slice("shop", "derived-a", "tcp", 8080, v4, ep("10.12.2.20", nil), ep("10.12.1.20", &ready), ep("10.12.1.30", &unready))},
		want: map[string]ProxyRules{"shop/derived-a:80": {ClusterIP: netip.MustParseAddr("10.97.0.5"), Port: 80,
			Endpoints: []netip.AddrPort{netip.MustParseAddrPort("10.12.1.20:8080"), netip.MustParseAddrPort("10.12.2.20:8080")}}},
	}, {
		name: "slices of another namespace, port name or family are not the Service's: a reject",
		svcs: []*corev1.Service{svc("shop", "derived-a", "10.97.0.5")},
		slices: []*discoveryv1.EndpointSlice{
			slice("other", "derived-a", "tcp", 8080, v4, ep("10.12.1.20", nil)),
			slice("shop", "derived-a", "udp", 8080, v4, ep("10.12.1.21", nil)),
			slice("shop", "derived-a", "tcp", 8080, discoveryv1.AddressTypeIPv6, ep("fd10::1", nil)),
		},
		want: map[string]ProxyRules{"shop/derived-a:80": {ClusterIP: netip.MustParseAddr("10.97.0.5"), Port: 80}},
	}, {
		name:   "headless and IPv6 Services are not routed",
		svcs:   []*corev1.Service{svc("shop", "headless", corev1.ClusterIPNone), svc("shop", "six", "fd00::5")},
		slices: []*discoveryv1.EndpointSlice{slice("shop", "headless", "tcp", 8080, v4, ep("10.12.1.20", nil))},
		want:   map[string]ProxyRules{},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := proxyRules(c.svcs, c.slices); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestRuleset(t *testing.T) {
	one := ProxyRules{ClusterIP: netip.MustParseAddr("10.97.0.5"), Port: 80,
		Endpoints: []netip.AddrPort{netip.MustParseAddrPort("10.12.1.20:8080"), netip.MustParseAddrPort("10.12.2.20:8080")}}
	none := ProxyRules{ClusterIP: netip.MustParseAddr("10.97.0.6"), Port: 443}
	cases := []struct {
		name  string
		rules map[string]ProxyRules
		lines []string // in this order in the ruleset
		ips   []netip.Addr
	}{{
		name:  "no Service: the table goes",
		rules: nil,
		lines: []string{"add table ip kube-proxy-standin", "delete table ip kube-proxy-standin"},
	}, {
		name:  "endpoints at random, a reject without any, both routed",
		rules: map[string]ProxyRules{"shop/a:80": one, "shop/b:443": none},
		lines: []string{
			"delete table ip kube-proxy-standin",
			"numgen random mod 2 vmap { 0 : goto svc0ep0, 1 : goto svc0ep1 }",
			"meta l4proto tcp dnat to 10.12.1.20:8080",
			"meta l4proto tcp dnat to 10.12.2.20:8080",
			"reject with tcp reset",
			"type nat hook output priority -100; policy accept;",
			"ip daddr 10.97.0.5 tcp dport 80 goto svc0",
			"ip daddr 10.97.0.6 tcp dport 443 goto svc1",
		},
		ips: []netip.Addr{one.ClusterIP, none.ClusterIP},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, ips := ruleset(c.rules)
			rest := text
			for _, l := range c.lines {
				i := strings.Index(rest, l)
				if i < 0 {
					t.Fatalf("ruleset lacks %q after the lines before it:\n%s", l, text)
				}
				rest = rest[i+len(l):]
			}
			if !slices.Equal(ips, c.ips) {
				t.Errorf("routes %v, want %v", ips, c.ips)
			}
			if c.rules == nil && strings.Contains(text, "chain") {
				t.Errorf("a ruleset without Services has chains:\n%s", text)
			}
		})
	}
}
