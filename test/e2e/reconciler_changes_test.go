//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Changes of the member clusters' nodes reaching the Peers: a node's key or
// endpoint, a leader, a node added or deleted. Subtests of TestReconciler.

// testKeyChange: a node's key change moves to its Peers.
func (c *rcTest) testKeyChange(t *testing.T) {
	_, key, err := framework.NewWireGuardKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.rc.env.AnnotateNode(c.ctx, 1, "c1-a1", map[string]string{kilov1alpha1.AnnotationKey: key}); err != nil {
		t.Fatal(err)
	}
	c.rc.keys[1]["c1-a1"] = key
	took := framework.EventuallyT(t, rcConverge, "new key on clusters 0 and 2", func() error {
		for _, i := range []int{0, 2} {
			p, err := c.rc.peerOf(t, c.mesh, i, 1, "location:a")
			if err != nil {
				return err
			}
			if p.Spec.PublicKey != key {
				return fmt.Errorf("cluster %d: key %s", i, p.Spec.PublicKey)
			}
		}
		return nil
	})
	t.Logf("key change on both clusters after %s", took.Round(time.Millisecond))
}

// testEndpointChange: a node's endpoint change moves to its Peers.
func (c *rcTest) testEndpointChange(t *testing.T) {
	if err := c.rc.env.AnnotateNode(c.ctx, 2, "c2-b1", map[string]string{kilov1alpha1.AnnotationEndpoint: "198.51.100.23:51821"}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, rcConverge, "new endpoint on clusters 0 and 1", func() error {
		for _, i := range []int{0, 1} {
			p, err := c.rc.peerOf(t, c.mesh, i, 2, "location:b")
			if err != nil {
				return err
			}
			if e := p.Spec.Endpoint; e == nil || e.DNSOrIP.IP != "198.51.100.23" || e.Port != 51821 {
				return fmt.Errorf("cluster %d: endpoint %+v", i, e)
			}
		}
		return nil
	})
}

// testLeaderChange: a leader change moves key and endpoint.
func (c *rcTest) testLeaderChange(t *testing.T) {
	if err := c.rc.env.AnnotateNode(c.ctx, 0, "c0-a2", map[string]string{kilov1alpha1.AnnotationLeader: "true"}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, rcConverge, "location a of cluster 0 led by c0-a2", func() error {
		for _, i := range []int{1, 2} {
			p, err := c.rc.peerOf(t, c.mesh, i, 0, "location:a")
			if err != nil {
				return err
			}
			if p.Spec.PublicKey != c.rc.keys[0]["c0-a2"] || p.Spec.Endpoint == nil || p.Spec.Endpoint.DNSOrIP.IP != "203.0.113.2" {
				return fmt.Errorf("cluster %d: %+v", i, p.Spec)
			}
			if p.Annotations[planner.AnnotationSourceLeader] != "c0-a2" {
				return fmt.Errorf("cluster %d: source-leader %q", i, p.Annotations[planner.AnnotationSourceLeader])
			}
		}
		return nil
	})
}

// testNodeAddedDeleted: a node added or deleted changes its group's Peer.
func (c *rcTest) testNodeAddedDeleted(t *testing.T) {
	k := framework.KiloNode{Name: "c2-a3", Location: "a", Endpoint: "203.0.113.24:51820", InternalIP: "192.168.2.4/24", PodCIDR: "10.12.4.0/24"}
	if _, err := c.rc.env.CreateKiloNode(c.ctx, 2, k); err != nil {
		t.Fatal(err)
	}
	has := func(want bool) func() error {
		return func() error {
			for _, i := range []int{0, 1} {
				p, err := c.rc.peerOf(t, c.mesh, i, 2, "location:a")
				if err != nil {
					return err
				}
				if slices.Contains(p.Spec.AllowedIPs, k.PodCIDR) != want {
					return fmt.Errorf("cluster %d: allowedIPs %v", i, p.Spec.AllowedIPs)
				}
			}
			return nil
		}
	}
	framework.EventuallyT(t, rcConverge, "the new node's pod CIDR advertised", has(true))
	if err := c.rc.kube(2).CoreV1().Nodes().Delete(c.ctx, k.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, rcConverge, "the deleted node's pod CIDR withdrawn", has(false))
	if err := c.rc.allMatchView(t, c.mesh); err != nil {
		t.Error(err)
	}
}
