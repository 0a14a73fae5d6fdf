package join

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestCoveringPrefix(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"10.42.1.0/24"}, "10.42.1.0/24"},
		{[]string{"10.42.1.0/24", "10.42.2.0/24", "10.42.3.0/24"}, "10.42.0.0/22"},
		{[]string{"10.42.0.0/24", "10.42.255.0/24"}, "10.42.0.0/16"},
		{[]string{"10.42.0.0/16", "10.42.7.0/24"}, "10.42.0.0/16"},
		{[]string{"10.0.0.0/24", "192.168.0.0/24"}, "0.0.0.0/0"},
		{[]string{"fd00:42::/64", "fd00:42:0:1::/64"}, "fd00:42::/63"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.in, ","), func(t *testing.T) {
			var in []netip.Prefix
			for _, s := range tt.in {
				in = append(in, netip.MustParsePrefix(s))
			}
			got, ok := CoveringPrefix(in)
			if !ok || got.String() != tt.want {
				t.Errorf("CoveringPrefix(%v) = %v, %v; want %s", tt.in, got, ok, tt.want)
			}
		})
	}
	if _, ok := CoveringPrefix(nil); ok {
		t.Errorf("CoveringPrefix(nil) reports a prefix")
	}
}

func node(name string, podCIDRs []string, wgIP string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDRs[0], podCIDRs
	}
	if wgIP != "" {
		n.Annotations[kilov1alpha1.AnnotationWireGuardIP] = wgIP
	}
	return n
}

func TestProposePodCIDRs(t *testing.T) {
	nodes := []corev1.Node{
		node("a", []string{"10.42.1.0/24", "fd00:42:0:1::/64"}, ""),
		node("b", []string{"10.42.2.0/24", "fd00:42:0:2::/64"}, ""),
		node("no-cidr", nil, ""),
	}
	p, err := ProposePodCIDRs(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.42.0.0/22", "fd00:42::/62"}; !slices.Equal(p.Values, want) {
		t.Errorf("proposal %v, want %v", p.Values, want)
	}
	if !strings.Contains(p.Source, "2 node(s)") || !strings.Contains(p.Source, "--pod-cidrs") {
		t.Errorf("source %q should count the nodes and name the flag", p.Source)
	}
	if _, err := ProposePodCIDRs([]corev1.Node{node("x", nil, "")}); err == nil || !strings.Contains(err.Error(), "--pod-cidrs") {
		t.Errorf("no pod CIDRs: want an error naming --pod-cidrs, got %v", err)
	}
	if _, err := ProposePodCIDRs([]corev1.Node{node("x", []string{"nonsense"}, "")}); err == nil {
		t.Errorf("malformed pod CIDR: want an error")
	}
}

func serviceCIDR(name string, cidrs ...string) networkingv1.ServiceCIDR {
	return networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
}

func TestProposeServiceCIDRs(t *testing.T) {
	svc, extra := ProposeServiceCIDRs([]networkingv1.ServiceCIDR{
		serviceCIDR("z-extra", "10.200.0.0/16"),
		serviceCIDR("kubernetes", "10.43.0.0/16", "fd00:43::/112"),
	}, true)
	if !slices.Equal(svc.Values, []string{"10.43.0.0/16"}) {
		t.Errorf("serviceCIDR %v, want the default's first CIDR", svc.Values)
	}
	if !slices.Equal(extra.Values, []string{"fd00:43::/112", "10.200.0.0/16"}) {
		t.Errorf("additionalCIDRs %v, want the default's second family, then the other ServiceCIDRs", extra.Values)
	}
	svc, extra = ProposeServiceCIDRs(nil, false)
	if len(svc.Values) != 0 || len(extra.Values) != 0 || !strings.Contains(svc.Source, "--service-cidr") {
		t.Errorf("not served: %+v %+v", svc, extra)
	}
}

func TestProposeWireguardCIDR(t *testing.T) {
	p, err := ProposeWireguardCIDR([]corev1.Node{node("a", nil, "10.4.0.1/16"), node("b", nil, "10.4.0.2/16"), node("c", nil, "")})
	if err != nil || !slices.Equal(p.Values, []string{"10.4.0.0/16"}) {
		t.Errorf("proposal %v, %v; want 10.4.0.0/16", p.Values, err)
	}
	for name, nodes := range map[string][]corev1.Node{
		"host routes only": {node("a", nil, "10.4.0.1/32")},
		"none":             {node("a", nil, "")},
		"disagreeing":      {node("a", nil, "10.4.0.1/16"), node("b", nil, "10.5.0.1/16")},
	} {
		if _, err := ProposeWireguardCIDR(nodes); err == nil || !strings.Contains(err.Error(), "--wireguard-cidr") {
			t.Errorf("%s: want an error naming --wireguard-cidr, got %v", name, err)
		}
	}
}

// A rerun without a flag keeps what an earlier join set: the apply owns
// what it sends, and leaving a field out would remove it.
func TestEntryKeepsFieldsNotGiven(t *testing.T) {
	o := &Options{Name: "north"}
	nets := Networks{PodCIDRs: Proposal{Values: []string{"10.62.0.0/16"}}, WireguardCIDR: Proposal{Values: []string{"10.6.0.0/16"}}}
	have := &meshv1alpha1.ClusterEntry{Name: "north", NodeCIDRs: []string{"192.168.30.0/24"}, PersistentKeepalive: 25,
		WireguardPort: meshv1alpha1.DefaultWireguardPort, Granularity: meshv1alpha1.GranularityAuto}
	e := o.entry(have, "north-kubeconfig", "kubeconfig", nets)
	if !slices.Equal(e["nodeCIDRs"].([]string), have.NodeCIDRs) || e["persistentKeepalive"] != int32(25) {
		t.Errorf("entry %v dropped fields of the existing entry", e)
	}
	if _, ok := e["wireguardPort"]; ok {
		t.Errorf("entry %v takes over the server's default port", e)
	}
	keepalive := int32(0)
	o.PersistentKeepalive = &keepalive
	if e := o.entry(have, "north-kubeconfig", "kubeconfig", nets); e["persistentKeepalive"] != int32(0) {
		t.Errorf("a flag given does not win: %v", e)
	}
	// behindNAT: kept when not given, set or left out (the default) when given.
	have.BehindNAT = true
	if e := o.entry(have, "north-kubeconfig", "kubeconfig", nets); e["behindNAT"] != true {
		t.Errorf("entry %v dropped behindNAT", e)
	}
	no := false
	o.BehindNAT = &no
	if e := o.entry(have, "north-kubeconfig", "kubeconfig", nets); e["behindNAT"] != nil {
		t.Errorf("--behind-nat=false kept behindNAT: %v", e)
	}
	o.BehindNAT = nil
	if up, err := entryUpToDate(have, o.entry(nil, "north-kubeconfig", "kubeconfig", nets)); err != nil || up {
		t.Errorf("an entry without its Secret reference is up to date: %v %v", up, err)
	}
}

func TestProposeNodeCIDRs(t *testing.T) {
	withIPs := func(name string, ips ...string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, ip := range ips {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.1"})
		return n
	}
	tests := []struct {
		name   string
		nodes  []corev1.Node
		want   []string
		source string
	}{
		{"none", []corev1.Node{withIPs("a")}, nil, "no node has an InternalIP"},
		{"one node", []corev1.Node{withIPs("a", "192.168.2.1")}, []string{"192.168.2.1/32"}, "InternalIPs of 1 node(s)"},
		{"a subnet", []corev1.Node{withIPs("a", "192.168.2.1"), withIPs("b", "192.168.2.4"), withIPs("c")}, []string{"192.168.2.0/29"}, "InternalIPs of 2 node(s)"},
		{"dual stack", []corev1.Node{withIPs("a", "10.0.0.1", "fd00::1"), withIPs("b", "10.0.0.2", "fd00::2")}, []string{"10.0.0.0/30", "fd00::/126"}, "of 2 node(s)"},
		{"unrelated networks", []corev1.Node{withIPs("a", "10.0.0.1"), withIPs("b", "192.168.0.1")}, nil, "0.0.0.0/0 left out: too wide"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ProposeNodeCIDRs(tt.nodes)
			if !slices.Equal(got.Values, tt.want) || !strings.Contains(got.Source, tt.source) {
				t.Errorf("ProposeNodeCIDRs = %v (%s), want %v (%s)", got.Values, got.Source, tt.want, tt.source)
			}
		})
	}
}

func TestWithoutOverlaps(t *testing.T) {
	p := Proposal{Values: []string{"192.168.2.0/29"}, Source: "covering"}
	tests := []struct {
		name   string
		others []string
		want   []string
	}{
		{"no other network", nil, []string{"192.168.2.0/29"}},
		{"disjoint", []string{"10.42.0.0/16", "192.168.1.0/24"}, []string{"192.168.2.0/29"}},
		{"a host network shared with another member", []string{"10.42.0.0/16", "192.168.2.0/24"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var others []netip.Prefix
			for _, o := range tt.others {
				others = append(others, netip.MustParsePrefix(o))
			}
			got := WithoutOverlaps(p, others)
			if !slices.Equal(got.Values, tt.want) || (tt.want == nil && !strings.Contains(got.Source, "overlap")) {
				t.Errorf("WithoutOverlaps = %v (%s), want %v", got.Values, got.Source, tt.want)
			}
		})
	}
}
