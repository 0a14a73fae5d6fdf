package planner

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

const testKey = "t8kWCuEeKmb6bV/Tpx0byyzoFe1KK6F3LpnDV/yBe+A="

// readyNode is a node kg counts as Ready at fixtureNow.
func readyNode(name string, extra map[string]string) *corev1.Node {
	a := map[string]string{
		kilov1alpha1.AnnotationKey:        testKey,
		kilov1alpha1.AnnotationEndpoint:   "203.0.113.9:51820",
		kilov1alpha1.AnnotationInternalIP: "192.168.1.9/24",
		kilov1alpha1.AnnotationLastSeen:   "1795175990",
	}
	for k, v := range extra {
		if v == "<delete>" {
			delete(a, k)
		} else {
			a[k] = v
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a, Labels: map[string]string{"topology.kubernetes.io/region": "fra"}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.10.9.0/24"},
	}
}

// parsed reads one node as analyze does: into a zero nodeInfo, the pod
// CIDRs taking their room from a pool sized as analyze sizes it.
func parsed(node *corev1.Node, topologyLabel string, now time.Time) nodeInfo {
	var n nodeInfo
	pool := make([]netip.Prefix, max(1, len(node.Spec.PodCIDRs)))
	parseNode(&n, node, topologyLabel, now, pool)
	return n
}

func TestParseNodeReadiness(t *testing.T) {
	for _, tc := range []struct {
		name    string
		extra   map[string]string
		podCIDR string
		reason  string
		message string
	}{
		{name: "ready"},
		{name: "no key", extra: map[string]string{kilov1alpha1.AnnotationKey: "<delete>"}, reason: ReasonNoPublicKey},
		{name: "key not base64", extra: map[string]string{kilov1alpha1.AnnotationKey: "not a key"}, reason: ReasonInvalidPublicKey},
		{name: "key of 31 bytes", extra: map[string]string{kilov1alpha1.AnnotationKey: "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHw=="}, reason: ReasonInvalidPublicKey},
		{name: "zero key is no key to kg", extra: map[string]string{kilov1alpha1.AnnotationKey: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}, reason: ReasonInvalidPublicKey},
		{name: "no pod CIDR", podCIDR: "-", reason: ReasonNoPodCIDR},
		{name: "bad pod CIDR", podCIDR: "10.10.9.0", reason: ReasonInvalidPodCIDR},
		{name: "no endpoint", extra: map[string]string{kilov1alpha1.AnnotationEndpoint: "<delete>"}, reason: ReasonNoEndpoint},
		{name: "malformed endpoint, no force", extra: map[string]string{kilov1alpha1.AnnotationEndpoint: "203.0.113.9"}, reason: ReasonNoEndpoint},
		{name: "malformed endpoint, force ok", extra: map[string]string{kilov1alpha1.AnnotationEndpoint: "bad", kilov1alpha1.AnnotationForceEndpoint: "wg.example.com:51820"}},
		{name: "malformed force, endpoint ok", extra: map[string]string{kilov1alpha1.AnnotationForceEndpoint: "bad"}},
		{name: "never checked in", extra: map[string]string{kilov1alpha1.AnnotationLastSeen: "<delete>"}, reason: ReasonNotReady, message: "kg is not running"},
		{name: "last-seen garbage", extra: map[string]string{kilov1alpha1.AnnotationLastSeen: "yesterday"}, reason: ReasonNotReady, message: "not a unix time"},
		{name: "checked in 59s ago", extra: map[string]string{kilov1alpha1.AnnotationLastSeen: "1795175941"}},
		{name: "checked in 60s ago", extra: map[string]string{kilov1alpha1.AnnotationLastSeen: "1795175940"}, reason: ReasonNotReady, message: "1m0s ago"},
		{name: "clock ahead of ours counts as ready, as in kg", extra: map[string]string{kilov1alpha1.AnnotationLastSeen: "1795176300"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := readyNode("n", tc.extra)
			switch tc.podCIDR {
			case "":
			case "-":
				n.Spec.PodCIDR = ""
			default:
				n.Spec.PodCIDR = tc.podCIDR
			}
			got := parsed(n, "topology.kubernetes.io/region", fixtureNow)
			if got.kiloReady != (tc.reason == "") || got.reason != tc.reason {
				t.Fatalf("kiloReady=%v reason=%q (%s); want reason %q", got.kiloReady, got.reason, got.message, tc.reason)
			}
			if !strings.Contains(got.message, tc.message) {
				t.Errorf("message %q does not contain %q", got.message, tc.message)
			}
		})
	}
}

func TestParseNodeAnnotations(t *testing.T) {
	t.Run("force-internal-ip overrides, - and empty remove", func(t *testing.T) {
		for v, want := range map[string]string{"10.9.9.9/8": "10.9.9.9", "-": "", "": "", "10.9.9.9": "192.168.1.9"} {
			n := parsed(readyNode("n", map[string]string{kilov1alpha1.AnnotationForceInternalIP: v}), "", fixtureNow)
			got := ""
			if n.internalIP.IsValid() {
				got = n.internalIP.String()
			}
			if got != want {
				t.Errorf("force-internal-ip %q: internal IP %q, want %q", v, got, want)
			}
		}
	})
	t.Run("location annotation beats the topology label, even empty", func(t *testing.T) {
		if n := parsed(readyNode("n", nil), "topology.kubernetes.io/region", fixtureNow); n.location != "fra" {
			t.Errorf("location %q, want fra from the label", n.location)
		}
		if n := parsed(readyNode("n", map[string]string{kilov1alpha1.AnnotationLocation: ""}), "topology.kubernetes.io/region", fixtureNow); n.location != "" {
			t.Errorf("location %q, want the annotation's empty value", n.location)
		}
		if n := parsed(readyNode("n", nil), "example.com/site", fixtureNow); n.location != "" {
			t.Errorf("location %q with another topology label, want none", n.location)
		}
	})
	t.Run("leader is presence alone", func(t *testing.T) {
		if !parsed(readyNode("n", map[string]string{kilov1alpha1.AnnotationLeader: ""}), "", fixtureNow).leaderHint {
			t.Error("an empty leader annotation must count")
		}
	})
	t.Run("keepalive", func(t *testing.T) {
		for v, want := range map[string]int{"25": 25, "0": 0, "abc": 0, "-5": 0, "25s": 0} {
			n := parsed(readyNode("n", map[string]string{kilov1alpha1.AnnotationPersistentKeepalive: v}), "", fixtureNow)
			if n.keepalive != want {
				t.Errorf("%q: keepalive %d, want %d", v, n.keepalive, want)
			}
			if bad := want == 0 && v != "0"; bad != hasNote(n, NoteMalformedAnnotation) {
				t.Errorf("%q: malformed note %v, want %v", v, !bad, bad)
			}
		}
	})
	t.Run("allowed-location-ips keeps the valid entries, canonical", func(t *testing.T) {
		n := parsed(readyNode("n", map[string]string{kilov1alpha1.AnnotationAllowedLocationIPs: "192.168.50.7/24,bogus, 10.0.0.0/8,fd00:1::/64"}), "", fixtureNow)
		want := []netip.Prefix{netip.MustParsePrefix("192.168.50.0/24"), netip.MustParsePrefix("fd00:1::/64")}
		if len(n.locationIPs) != len(want) || n.locationIPs[0] != want[0] || n.locationIPs[1] != want[1] {
			t.Errorf("locationIPs %v, want %v (kg does not trim spaces)", n.locationIPs, want)
		}
		if !hasNote(n, NoteMalformedAnnotation) {
			t.Error("dropped entries must be noted")
		}
	})
	t.Run("dual-stack pod CIDRs: primary first, no repeats", func(t *testing.T) {
		nd := readyNode("n", nil)
		nd.Spec.PodCIDRs = []string{"10.10.9.0/24", "fd10::900/120", "junk"}
		n := parsed(nd, "", fixtureNow)
		if len(n.podCIDRs) != 2 || n.podCIDRs[1] != netip.MustParsePrefix("fd10::900/120") {
			t.Errorf("podCIDRs %v", n.podCIDRs)
		}
	})
	t.Run("wireguard-ip keeps its host part", func(t *testing.T) {
		n := parsed(readyNode("n", map[string]string{kilov1alpha1.AnnotationWireGuardIP: "10.4.0.3/16"}), "", fixtureNow)
		if n.wireguardIP.String() != "10.4.0.3/16" {
			t.Errorf("wireguardIP %v", n.wireguardIP)
		}
	})
}

func hasNote(n nodeInfo, reason string) bool {
	for _, note := range n.notes {
		if note.Reason == reason {
			return true
		}
	}
	return false
}

// FuzzParseNodeAnnotations feeds arbitrary annotation values through the
// node parser: it must not panic, and whatever it accepts must be usable.
func FuzzParseNodeAnnotations(f *testing.F) {
	f.Add(testKey, "203.0.113.9:51820", "", "192.168.1.9/24", "", "1795175990", "25", "192.168.50.0/24,10.0.0.0/8", "10.4.0.1/16", "10.10.9.0/24", "location")
	f.Add("", "[2001:db8::1]:51820", "wg.example.com:1", "-", "fd00::1/64", "0", "x", ",,,", "", "fd10::/120", "cross")
	f.Add("AAAA", "bad", "[fe80::1%eth0]:1", "1.2.3.4", "", "-1", "99999999999999999999", "::/0", "garbage", "10.10.9.0", "")
	f.Fuzz(func(t *testing.T, key, endpoint, force, internal, forceInternal, lastSeen, keepalive, locIPs, wgIP, podCIDR, gran string) {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
				kilov1alpha1.AnnotationKey: key, kilov1alpha1.AnnotationEndpoint: endpoint, kilov1alpha1.AnnotationForceEndpoint: force,
				kilov1alpha1.AnnotationInternalIP: internal, kilov1alpha1.AnnotationForceInternalIP: forceInternal, kilov1alpha1.AnnotationLastSeen: lastSeen,
				kilov1alpha1.AnnotationPersistentKeepalive: keepalive, kilov1alpha1.AnnotationAllowedLocationIPs: locIPs,
				kilov1alpha1.AnnotationWireGuardIP: wgIP, kilov1alpha1.AnnotationGranularity: gran,
			}},
			Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR, locIPs}},
		}
		got := parsed(n, "", time.Unix(1795176000, 0))
		if got.kiloReady {
			if got.reason != "" || len(got.podCIDRs) == 0 || got.kiloEndpoint.IsZero() || !validKey(got.key) {
				t.Fatalf("ready node without what kg requires: %+v", got)
			}
		} else if got.reason == "" || got.message == "" {
			t.Fatalf("node not ready without a reason: %+v", got)
		}
		for _, p := range append(got.podCIDRs, got.locationIPs...) {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() {
				t.Fatalf("non-canonical prefix %v", p)
			}
		}
		if got.internalIP.IsValid() && (got.internalIP.Zone() != "" || got.internalIP.Is4In6()) {
			t.Fatalf("internal IP %v keeps a zone or mapping", got.internalIP)
		}
		if got.keepalive < 0 || got.keepalive > 65535 {
			t.Fatalf("keepalive %d", got.keepalive)
		}
		for _, note := range got.notes {
			if note.Reason == "" || note.Message == "" {
				t.Fatalf("empty note %+v", note)
			}
		}
	})
}
