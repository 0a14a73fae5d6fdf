//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// viewsSettle bounds how long a change on a member cluster takes to show in the views.
const viewsSettle = 30 * time.Second

const viewsMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: views
spec:
  clusters:
  - name: east
    local: true
    podCIDRs: ["10.42.0.0/16"]
    wireguardCIDR: 10.4.0.0/16
    nodeCIDRs: ["192.168.0.0/24"]
  - name: west
    kubeconfigSecretRef: {name: west-kubeconfig}
    podCIDRs: ["10.52.0.0/16"]
    serviceCIDR: 10.53.0.0/16
    wireguardCIDR: 10.5.0.0/16
    nodeCIDRs: ["192.168.1.0/24"]
    granularity: Location
  - name: north
    kubeconfigSecretRef: {name: north-kubeconfig}
    podCIDRs: ["10.62.0.0/16"]
    wireguardCIDR: 10.6.0.0/16
    nodeCIDRs: ["192.168.2.0/24"]
    granularity: Full
`

type viewsEnv struct {
	env    *framework.Env
	ns     string
	server *framework.MeshServer
	// north is the kubeconfig of cluster 2 for the least-privileged
	// identity of artifacts/member, with a token valid for an hour.
	north []byte
	// fresh are the nodes kept Ready (last-seen refreshed), per cluster.
	fresh [3][]string
}

func startViewsEnv(t *testing.T) *viewsEnv {
	t.Helper()
	env := framework.StartT(t, framework.Options{Clusters: 3, Users: []framework.User{{Name: "mesh-editor", Groups: []string{"kilo-mesh:editors"}}, {Name: "status-reader"}}})
	server := env.StartMeshServerT(t, framework.MeshServerOptions{ExtraArgs: []string{"--allowed-cidrs=10.0.0.0/8,192.168.0.0/16,fd00::/8"}})
	ctx := context.Background()
	v := &viewsEnv{env: env, ns: framework.NamespaceTenantA, server: server}
	t.Cleanup(func() {
		if strings.Contains(server.Logs(), "is forbidden") {
			t.Errorf("the server met Forbidden errors with the shipped RBAC (artifacts/deploy, artifacts/member)")
		}
	})
	nodes := []struct {
		cluster int
		node    framework.KiloNode
		fresh   bool
	}{
		{0, framework.KiloNode{Name: "e1", Location: "home", Leader: true, Endpoint: "198.51.100.1:51820", InternalIP: "192.168.0.1/24", WireGuardIP: "10.4.0.1/16", PodCIDR: "10.42.1.0/24"}, true},
		{1, framework.KiloNode{Name: "w1", Location: "eu-1", Leader: true, Endpoint: "203.0.113.10:51820", InternalIP: "192.168.1.10/24", WireGuardIP: "10.5.0.1/16", PodCIDR: "10.52.1.0/24"}, true},
		{1, framework.KiloNode{Name: "w2", Location: "eu-1", Endpoint: "192.168.1.11:51820", InternalIP: "192.168.1.11/24", PodCIDR: "10.52.2.0/24"}, true},
		{1, framework.KiloNode{Name: "w3", Location: "eu-2", Endpoint: "203.0.113.12:51820", InternalIP: "192.168.1.12/24", WireGuardIP: "10.5.0.2/16", PodCIDR: "10.52.3.0/24"}, true},
		{1, framework.KiloNode{Name: "w4-nokey", Location: "eu-2", NoKey: true, Endpoint: "203.0.113.13:51820", PodCIDR: "10.52.4.0/24"}, true},
		{1, framework.KiloNode{Name: "w5-stale", Location: "eu-2", Endpoint: "203.0.113.14:51820", PodCIDR: "10.52.5.0/24", LastSeen: time.Now().Add(-10 * time.Minute)}, false},
		{1, framework.KiloNode{Name: "w6-outside", Location: "eu-2", Endpoint: "203.0.113.15:51820", InternalIP: "192.168.1.15/24", PodCIDR: "10.99.6.0/24"}, true},
		{2, framework.KiloNode{Name: "n1", Granularity: "full", Endpoint: "192.0.2.1:51820", InternalIP: "192.168.2.1/24", WireGuardIP: "10.6.0.1/16", PodCIDR: "10.62.1.0/24"}, true},
		{2, framework.KiloNode{Name: "n2", Granularity: "full", Endpoint: "gw.north.example.com:51820", InternalIP: "192.168.2.2/24", WireGuardIP: "10.6.0.2/16", PodCIDR: "10.62.2.0/24"}, true},
	}
	for _, n := range nodes {
		if _, err := env.CreateKiloNode(ctx, n.cluster, n.node); err != nil {
			t.Fatalf("node %s: %v", n.node.Name, err)
		}
		if n.fresh {
			v.fresh[n.cluster] = append(v.fresh[n.cluster], n.node.Name)
		}
	}
	// kg checks in every 30 s; the stale node must stay stale.
	refreshCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() {
		for {
			for i, names := range v.fresh {
				_ = env.TouchKiloNodes(refreshCtx, i, names...)
			}
			select {
			case <-refreshCtx.Done():
				return
			case <-time.After(15 * time.Second):
			}
		}
	}()
	if _, err := env.CreateKubeconfigSecret(ctx, v.ns, "west-kubeconfig", 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	// north is reached as the shipped member-cluster identity: the views
	// (and the reconciler) must work with exactly those permissions.
	if _, stderr, err := env.Kubectl(ctx, 2, framework.UserAdmin, "apply", "-k", "../../artifacts/member"); err != nil {
		t.Fatalf("applying artifacts/member: %v\n%s", err, stderr)
	}
	token, err := env.ServiceAccountToken(ctx, 2, "kilo-mesh-member", "kilo-mesh-member", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if v.north, err = env.KubeconfigFor(2, "kilo-mesh-member", token); err != nil {
		t.Fatal(err)
	}
	north := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "north-kubeconfig", Namespace: v.ns}, Data: map[string][]byte{"kubeconfig": v.north}}
	if _, err := env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(v.ns).Create(ctx, north, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The tenants have edit in their namespaces and no Peer rights on the
	// host; an administrator lets their meshes use the host cluster.
	for _, ns := range []string{framework.NamespaceTenantA, framework.NamespaceTenantB} {
		if err := env.ApplyGrant(ctx, ns, framework.TenantGrant(ns)); err != nil {
			t.Fatal(err)
		}
	}
	v.kubectlIn(t, framework.UserTenantA, viewsMesh, "create", "-f", "-")
	return v
}

func (v *viewsEnv) kubectl(t *testing.T, user string, args ...string) (string, error) {
	t.Helper()
	out, stderr, err := v.env.Kubectl(context.Background(), framework.HostCluster, user, args...)
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, stderr)
	}
	return out, nil
}

func (v *viewsEnv) kubectlIn(t *testing.T, user, stdin string, args ...string) {
	t.Helper()
	v.env.KubectlInT(t, framework.HostCluster, user, stdin, append([]string{"-n", v.ns}, args...)...)
}

func (v *viewsEnv) raw(t *testing.T, user, path string) (string, error) {
	t.Helper()
	return v.kubectl(t, user, "get", "--raw", "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"+v.ns+"/clustermeshes/views/"+path)
}

func (v *viewsEnv) plan(t *testing.T) *meshv1alpha1.ClusterMeshPlan {
	t.Helper()
	out, err := v.raw(t, framework.UserViewerA, "plan")
	if err != nil {
		t.Fatal(err)
	}
	p := &meshv1alpha1.ClusterMeshPlan{}
	if err := json.Unmarshal([]byte(out), p); err != nil {
		t.Fatalf("decoding plan: %v\n%s", err, out)
	}
	return p
}

func clusterPlan(p *meshv1alpha1.ClusterMeshPlan, name string) *meshv1alpha1.ClusterPlan {
	for i := range p.Clusters {
		if p.Clusters[i].Name == name {
			return &p.Clusters[i]
		}
	}
	return nil
}

func nodeDecision(c *meshv1alpha1.ClusterPlan, node string) *meshv1alpha1.NodeDecision {
	for i := range c.Nodes {
		if c.Nodes[i].Node == node {
			return &c.Nodes[i]
		}
	}
	return nil
}
