//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testRelay: west and north behind NAT, relayed through east, the host, on
// the tenant's grant. The views say so, the Peers written on west carry
// what east holds of north, never what the grant keeps out of east; with
// no grant the host relays nothing; with every cluster behind NAT the mesh
// is not Ready, the reason naming the pairs. The spec and the grant are
// restored after.
func testRelay(t *testing.T, v *viewsEnv) {
	ctx := context.Background()
	patch := func(t *testing.T, ops string) {
		t.Helper()
		v.kubectlIn(t, framework.UserTenantA, "", "patch", "clustermesh", "views", "--type=json", "-p", ops)
	}
	t.Cleanup(func() {
		if err := v.env.ApplyGrant(ctx, v.ns, framework.TenantGrant(v.ns)); err != nil {
			t.Error(err)
		}
		patch(t, `[{"op":"add","path":"/spec/clusters/0/behindNAT","value":false},{"op":"add","path":"/spec/clusters/1/behindNAT","value":false},{"op":"add","path":"/spec/clusters/2/behindNAT","value":false}]`)
	})
	patch(t, `[{"op":"add","path":"/spec/clusters/1/behindNAT","value":true},{"op":"add","path":"/spec/clusters/2/behindNAT","value":true}]`)

	t.Run("the plan relays west and north through east, and says why", func(t *testing.T) {
		framework.EventuallyT(t, viewsSettle, "a relayed pair in the plan", func() error {
			p := v.plan(t)
			r := p.Relay
			if r == nil || r.Cluster != "east" || r.Basis != meshv1alpha1.RelayBasisChosen || !strings.Contains(r.Message, "first cluster by name") {
				return fmt.Errorf("relay %+v", r)
			}
			if len(p.Paths) != 1 || !slices.Equal(p.Paths[0].Clusters, []string{"north", "west"}) || p.Paths[0].Kind != meshv1alpha1.PathRelayed || p.Paths[0].Via != "east" {
				return fmt.Errorf("paths %+v", p.Paths)
			}
			return nil
		})
		out, err := v.kubectl(t, framework.UserViewerA, "-n", v.ns, "get", "clustermesh", "views", "--subresource=plan")
		if err != nil {
			t.Fatal(err)
		}
		cols, rows := kubectlTable(t, out)
		for _, row := range rows {
			name := cell(t, cols, row, "CLUSTER")
			want := map[string]string{"east": "Direct", "west": "BehindNAT, relayed via east", "north": "BehindNAT, relayed via east"}[name]
			if got := cell(t, cols, row, "REACHED"); got != want {
				t.Errorf("%s: reached %q, want %q", name, got, want)
			}
		}
	})

	t.Run("west holds no Peer of north; east's Peer there carries north's networks", func(t *testing.T) {
		relay := waitRelayPeer(t, v, 1, "north", func(p *kilov1alpha1.Peer) error {
			if !slices.Contains(p.Spec.AllowedIPs, "10.62.1.0/24") || !slices.Contains(p.Spec.AllowedIPs, "10.62.2.0/24") {
				return fmt.Errorf("relay Peer %s carries %v", p.Name, p.Spec.AllowedIPs)
			}
			return nil
		})
		if relay.Labels[planner.LabelSourceCluster] != "east" {
			t.Errorf("relay Peer %s is of %s", relay.Name, relay.Labels[planner.LabelSourceCluster])
		}
		for _, p := range peersOn(t, v, 1) {
			if p.Labels[planner.LabelSourceCluster] == "north" {
				t.Errorf("west holds Peer %s of north", p.Name)
			}
		}
		// north's Peers on east: no endpoint, a keepalive.
		for _, p := range peersOn(t, v, 0) {
			if p.Labels[planner.LabelSourceCluster] == "north" && (p.Spec.Endpoint != nil || p.Spec.PersistentKeepalive <= 0) {
				t.Errorf("east: Peer %s of north behind NAT: endpoint %v, keepalive %d", p.Name, p.Spec.Endpoint, p.Spec.PersistentKeepalive)
			}
		}
		wg, err := v.raw(t, framework.UserViewerA, "peers?cluster=west&format=wireguard")
		if err != nil || !strings.Contains(wg, "# relay: also carries the networks of north") {
			t.Errorf("wireguard of west (%v):\n%s", err, wg)
		}
		dot, err := v.raw(t, framework.UserViewerA, "peers?format=dot")
		if err != nil || !strings.Contains(dot, `label="relayed via east"`) || !strings.Contains(dot, "relays between the clusters behind NAT") {
			t.Errorf("dot (%v):\n%s", err, dot)
		}
	})

	t.Run("the relay carries only what the grant lets into east", func(t *testing.T) {
		grant := framework.TenantGrant(v.ns)
		// Everything of west, and north's WireGuard and node networks; not north's pods.
		grant.MemberNetworks = []string{"10.52.0.0/16", "10.53.0.0/16", "10.5.0.0/16", "10.6.0.0/16", "192.168.0.0/16"}
		if err := v.env.ApplyGrant(ctx, v.ns, grant); err != nil {
			t.Fatal(err)
		}
		waitRelayPeer(t, v, 1, "north", func(p *kilov1alpha1.Peer) error {
			for _, a := range p.Spec.AllowedIPs {
				if strings.HasPrefix(a, "10.62.") {
					return fmt.Errorf("relay Peer %s still carries %s, which the grant keeps out of east", p.Name, a)
				}
			}
			if !slices.Contains(p.Spec.AllowedIPs, "10.6.0.1/32") {
				return fmt.Errorf("relay Peer %s lost what the grant allows: %v", p.Name, p.Spec.AllowedIPs)
			}
			return nil
		})
	})

	t.Run("without a grant or Peer rights the host relays nothing", func(t *testing.T) {
		if err := v.env.DeleteGrant(ctx, v.ns); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, viewsSettle, "no relay through the host", func() error {
			p := v.plan(t)
			r := p.Relay
			if r == nil || r.Cluster != "" || !slices.ContainsFunc(r.Refused, func(x meshv1alpha1.RelayRefusal) bool {
				return x.Cluster == "east" && x.Reason == planner.RelayRefusedCannotCarry
			}) {
				return fmt.Errorf("relay %+v", r)
			}
			if len(p.Paths) != 1 || p.Paths[0].Kind != meshv1alpha1.PathNone {
				return fmt.Errorf("paths %+v", p.Paths)
			}
			return nil
		})
		framework.EventuallyT(t, viewsSettle, "no relayed network on west", func() error {
			for _, p := range peersOn(t, v, 1) {
				if p.Annotations[planner.AnnotationRelays] != "" || p.Labels[planner.LabelSourceCluster] == "north" {
					return fmt.Errorf("west holds Peer %s (relays %q)", p.Name, p.Annotations[planner.AnnotationRelays])
				}
			}
			return nil
		})
		if err := v.env.ApplyGrant(ctx, v.ns, framework.TenantGrant(v.ns)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("every cluster behind NAT: not Ready, the reason naming the pairs", func(t *testing.T) {
		patch(t, `[{"op":"add","path":"/spec/clusters/0/behindNAT","value":true}]`)
		framework.EventuallyT(t, viewsSettle, "Ready False with NoRelay", func() error {
			c := meshCondition(t, v, meshv1alpha1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != planner.ConflictNoRelay {
				return fmt.Errorf("Ready %+v", c)
			}
			for _, pair := range []string{"east and north", "east and west", "north and west"} {
				if !strings.Contains(c.Message, pair) {
					return fmt.Errorf("Ready's message does not name %s: %s", pair, c.Message)
				}
			}
			return nil
		})
		// The field path of a relay that cannot be one.
		out, err := v.kubectl(t, framework.UserTenantA, "-n", v.ns, "patch", "clustermesh", "views", "--type=merge", "-p", `{"spec":{"relayCluster":"west"}}`)
		if err == nil || !strings.Contains(err.Error(), "spec.relayCluster") || !strings.Contains(err.Error(), "behindNAT") {
			t.Errorf("a relay behind NAT: want a 422 naming spec.relayCluster, got %v\n%s", err, out)
		}
	})
}

// waitRelayPeer waits until cluster i holds a Peer of the mesh relaying
// cluster relayed that satisfies check, and returns it.
func waitRelayPeer(t *testing.T, v *viewsEnv, i int, relayed string, check func(*kilov1alpha1.Peer) error) *kilov1alpha1.Peer {
	t.Helper()
	var found *kilov1alpha1.Peer
	framework.EventuallyT(t, viewsSettle, "a relay Peer of "+relayed, func() error {
		for _, p := range peersOn(t, v, i) {
			if slices.Contains(strings.Split(p.Annotations[planner.AnnotationRelays], ","), relayed) {
				found = p
				return check(p)
			}
		}
		return fmt.Errorf("no Peer relays %s", relayed)
	})
	return found
}

// peersOn lists the Peers on cluster i.
func peersOn(t *testing.T, v *viewsEnv, i int) []*kilov1alpha1.Peer {
	t.Helper()
	list, err := v.env.Dynamic(i, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*kilov1alpha1.Peer
	for _, u := range list.Items {
		p := &kilov1alpha1.Peer{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// meshCondition reads one condition of the views mesh.
func meshCondition(t *testing.T, v *viewsEnv, typ string) *metav1.Condition {
	t.Helper()
	out, err := v.kubectl(t, framework.UserViewerA, "-n", v.ns, "get", "clustermesh", "views", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var m meshv1alpha1.ClusterMesh
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(m.Status.Conditions, typ)
}
