package main

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

var now = time.Unix(1_800_000_000, 0)

// testKey is a valid base64 WireGuard key distinct per n.
func testKey(n int) string {
	b := make([]byte, 32)
	b[0] = byte(n)
	return base64.StdEncoding.EncodeToString(b)
}

type tn struct {
	name, loc, internal, pod, wg, granularity string
	key                                       int
	stale, noKey                              bool
}

// node builds the Node as kg leaves it, with the test framework's builder.
func (n tn) node() *corev1.Node {
	k := framework.KiloNode{
		Name:        n.name,
		Location:    n.loc,
		Endpoint:    "203.0.113." + strconv.Itoa(n.key) + ":51820",
		InternalIP:  n.internal,
		PodCIDR:     n.pod,
		WireGuardIP: n.wg,
		Key:         testKey(n.key),
		NoKey:       n.noKey,
		Granularity: n.granularity,
		LastSeen:    now,
	}
	if n.stale {
		k.LastSeen = now.Add(-2 * time.Minute)
	}
	node, err := k.Build()
	if err != nil {
		panic(err)
	}
	return node
}

func peerCR(name string, key int, allowed ...string) *kilov1alpha1.Peer {
	return &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kilov1alpha1.PeerSpec{
			PublicKey:  testKey(key),
			AllowedIPs: allowed,
			Endpoint:   &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "203.0.113." + strconv.Itoa(key)}, Port: 51820},
		},
	}
}

func routes(c config) []string {
	var out []string
	for _, r := range c.Routes {
		if r.Via.IsValid() {
			out = append(out, r.Dst.String()+" via "+r.Via.String())
		} else {
			out = append(out, r.Dst.String()+" wg")
		}
	}
	return out
}

func TestCompute(t *testing.T) {
	cluster := []tn{
		{name: "a1", loc: "a", internal: "192.168.0.1/24", pod: "10.10.1.0/24", wg: "10.40.0.1/16", key: 1},
		{name: "a2", loc: "a", internal: "192.168.0.2/24", pod: "10.10.2.0/24", key: 2},
		{name: "b1", loc: "b", internal: "192.168.0.3/24", pod: "fd10::/64", wg: "10.40.0.2/16", key: 3},
		{name: "stale", loc: "a", internal: "192.168.0.4/24", pod: "10.10.4.0/24", key: 4, stale: true},
		{name: "nokey", loc: "a", internal: "192.168.0.5/24", pod: "10.10.5.0/24", key: 5, noKey: true},
	}
	var nodes []*corev1.Node
	for _, n := range cluster {
		nodes = append(nodes, n.node())
	}
	crs := []*kilov1alpha1.Peer{
		peerCR("z-remote", 20, "10.11.1.0/24", "10.97.0.0/16"),
		peerCR("a-remote", 21, "10.11.1.0/24", "10.11.2.0/24"), // earlier by name: keeps 10.11.1.0/24
		peerCR("bad", 22, "10.12.0.1"),                         // not a CIDR: kg ignores the Peer
	}

	t.Run("location leader", func(t *testing.T) {
		c, err := compute("a1", nodes, crs, now)
		if err != nil {
			t.Fatal(err)
		}
		if !c.IsLeader || c.Group != "location:a" || c.Address.String() != "10.40.0.1/16" {
			t.Fatalf("got %+v", c)
		}
		var keys []string
		for _, p := range c.Peers {
			keys = append(keys, p.PublicKey)
		}
		if want := []string{testKey(3), testKey(21), testKey(20)}; !slices.Equal(keys, want) {
			t.Errorf("peers %v, want %v", keys, want)
		}
		if got := fmt.Sprint(c.Peers[0].AllowedIPs); got != "[fd10::/64 192.168.0.3/32 10.40.0.2/32]" {
			t.Errorf("location b's allowed IPs %s", got)
		}
		if got := fmt.Sprint(c.Peers[2].AllowedIPs); got != "[10.97.0.0/16]" {
			t.Errorf("z-remote keeps %s, want only what a-remote did not claim", got)
		}
		want := []string{"10.10.2.0/24 via 192.168.0.2", "10.11.1.0/24 wg", "10.11.2.0/24 wg", "10.40.0.2/32 wg", "10.97.0.0/16 wg", "192.168.0.3/32 wg", "fd10::/64 wg"}
		if got := routes(c); !slices.Equal(got, want) {
			t.Errorf("routes\n%v\nwant\n%v", got, want)
		}
	})

	t.Run("location member routes through its leader, IPv4 only", func(t *testing.T) {
		c, err := compute("a2", nodes, crs, now)
		if err != nil {
			t.Fatal(err)
		}
		if c.IsLeader || c.Leader != "a1" || len(c.Peers) != 0 || c.Address.IsValid() {
			t.Fatalf("got %+v", c)
		}
		want := []string{"10.10.1.0/24 via 192.168.0.1", "10.11.1.0/24 via 192.168.0.1", "10.11.2.0/24 via 192.168.0.1",
			"10.40.0.2/32 via 192.168.0.1", "10.97.0.0/16 via 192.168.0.1", "192.168.0.3/32 via 192.168.0.1"}
		if got := routes(c); !slices.Equal(got, want) {
			t.Errorf("routes\n%v\nwant\n%v", got, want)
		}
	})

	t.Run("a group with two WireGuard IPs has no leader", func(t *testing.T) {
		two := slices.Clone(nodes)
		n := cluster[1]
		n.wg = "10.40.0.3/16"
		two[1] = n.node()
		c, err := compute("a2", two, crs, now)
		if err != nil {
			t.Fatal(err)
		}
		if c.Leader != "" || c.IsLeader || len(routes(c)) != 1 {
			t.Fatalf("got %+v", c)
		}
	})

	t.Run("full granularity: every node leads itself", func(t *testing.T) {
		var full []*corev1.Node
		for i, n := range cluster[:3] {
			n.granularity = "full"
			n.wg = fmt.Sprintf("10.40.0.%d/16", i+1)
			full = append(full, n.node())
		}
		c, err := compute("a2", full, nil, now)
		if err != nil {
			t.Fatal(err)
		}
		if !c.IsLeader || c.Group != "node:a2" || len(c.Peers) != 2 {
			t.Fatalf("got %+v", c)
		}
		want := []string{"10.10.1.0/24 wg", "10.40.0.1/32 wg", "10.40.0.3/32 wg", "192.168.0.1/32 wg", "192.168.0.3/32 wg", "fd10::/64 wg"}
		if got := routes(c); !slices.Equal(got, want) {
			t.Errorf("routes\n%v\nwant\n%v", got, want)
		}
	})

	t.Run("a node Kilo does not count configures nothing", func(t *testing.T) {
		if _, err := compute("stale", nodes, crs, now); err == nil {
			t.Error("no error for a stale node")
		}
	})
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6443":        true,
		"[::1]:6443":            true,
		"127.0.0.53:443":        true,
		"169.254.169.254:80":    false,
		"10.0.0.1:6443":         false,
		"localhost:6443":        false,
		"[::ffff:10.0.0.1]:443": false,
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("checkLoopback(%s) = %v", addr, err)
		}
	}
}

// TestReadNodeKiloFacts: the agent groups nodes by Kilo's own rules, written
// here as Kilo states them and not as this repository's API spells them.
func TestReadNodeKiloFacts(t *testing.T) {
	base := tn{name: "n", internal: "192.168.0.1/24", pod: "10.10.1.0/24", key: 1}
	for _, tc := range []struct {
		name        string
		granularity string
		location    string
		labels      map[string]string
		group       string
		ready       bool
	}{
		{name: "no annotation is kg's default, location, by the region label", labels: map[string]string{"topology.kubernetes.io/region": "eu"}, group: "location:eu", ready: true},
		{name: "the location annotation overrides the region label", granularity: "location", location: "home", labels: map[string]string{"topology.kubernetes.io/region": "eu"}, group: "location:home", ready: true},
		{name: "the zone label is not Kilo's default", labels: map[string]string{"topology.kubernetes.io/zone": "eu-1"}, group: "location:", ready: true},
		{name: "full", granularity: "full", group: "node:n", ready: true},
		{name: "cross", granularity: "cross", group: "node:n", ready: true},
		{name: "kg writes lower case only", granularity: "Location", ready: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base
			n.granularity, n.loc = tc.granularity, tc.location
			node := n.node()
			delete(node.Annotations, kilov1alpha1.AnnotationGranularity)
			if tc.granularity != "" {
				node.Annotations[kilov1alpha1.AnnotationGranularity] = tc.granularity
			}
			node.Labels = tc.labels
			k := readNode(node, now)
			if k.ready != tc.ready || (tc.ready && k.group != tc.group) {
				t.Errorf("group %q, ready %v; want %q, %v", k.group, k.ready, tc.group, tc.ready)
			}
		})
	}
}
