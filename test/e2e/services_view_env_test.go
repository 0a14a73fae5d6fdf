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

// servicesViewMesh is two member clusters reached with the shipped member
// identity; the host cluster only serves. It starts with services disabled.
const servicesViewMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: shop
spec:
  clusters:
  - name: west
    kubeconfigSecretRef: {name: west-kubeconfig}
    podCIDRs: ["10.52.0.0/16"]
    wireguardCIDR: 10.5.0.0/16
    nodeCIDRs: ["192.168.1.0/24"]
  - name: north
    kubeconfigSecretRef: {name: north-kubeconfig}
    podCIDRs: ["10.62.0.0/16"]
    wireguardCIDR: 10.6.0.0/16
    nodeCIDRs: ["192.168.2.0/24"]
`

// The Service west exports: cart-1 and cart-2 are carried; cart-3 is
// addressed outside west's podCIDRs and cart-4 is not ready, so both are
// left out, each with its reason.
const cartService = `apiVersion: v1
kind: Service
metadata:
  name: cart
  namespace: shop
spec:
  selector: {app: cart}
  ports:
  - {name: http, port: 80, protocol: TCP, targetPort: 8080}
`

const cartExport = `apiVersion: multicluster.x-k8s.io/v1beta1
kind: ServiceExport
metadata:
  name: cart
  namespace: shop
`

var cartPods = []framework.ReadyPod{
	{Name: "cart-1", Node: "w1", IP: "10.52.1.5"},
	{Name: "cart-2", Node: "w1", IP: "10.52.1.6"},
	{Name: "cart-3", Node: "w1", IP: "10.99.0.7"},
	{Name: "cart-4", Node: "w1", IP: "10.52.1.8", NotReady: true},
}

type servicesViewEnv struct {
	env *framework.Env
	ns  string
}

// startServicesViewEnv: three clusters (0 hosts the server), west (1) and
// north (2) with a Kilo node each and namespace shop, west serving
// shop/cart from its Pods through its own endpointslice controller; the
// mesh created with services disabled.
func startServicesViewEnv(t *testing.T) *servicesViewEnv {
	t.Helper()
	env := framework.StartT(t, framework.Options{Clusters: 3, Users: []framework.User{{Name: "services-reader"}, {Name: "status-reader"}}})
	server := env.StartMeshServerT(t, framework.MeshServerOptions{ExtraArgs: []string{"--allowed-cidrs=10.0.0.0/8,192.168.0.0/16"}})
	t.Cleanup(func() {
		if strings.Contains(server.Logs(), "is forbidden") {
			t.Errorf("the server met Forbidden errors with the shipped RBAC (artifacts/deploy, artifacts/member):\n%s", server.LogTail(40))
		}
	})
	ctx := context.Background()
	v := &servicesViewEnv{env: env, ns: framework.NamespaceTenantA}
	for _, m := range []struct {
		cluster int
		name    string
		node    framework.KiloNode
	}{
		{1, "west", framework.KiloNode{Name: "w1", Location: "eu", Leader: true, Endpoint: "203.0.113.10:51820", InternalIP: "192.168.1.10/24", WireGuardIP: "10.5.0.1/16", PodCIDR: "10.52.1.0/24"}},
		{2, "north", framework.KiloNode{Name: "n1", Location: "north", Leader: true, Endpoint: "192.0.2.1:51820", InternalIP: "192.168.2.1/24", WireGuardIP: "10.6.0.1/16", PodCIDR: "10.62.1.0/24"}},
	} {
		if _, err := env.CreateKiloNode(ctx, m.cluster, m.node); err != nil {
			t.Fatalf("node %s: %v", m.node.Name, err)
		}
		// Else kube-controller-manager marks the Node Unknown after its
		// grace period and cart's Pods not ready, which changes the view.
		go env.KeepNodesReady(t.Context(), 10*time.Second, m.cluster, m.node.Name)
		if err := env.CreateMemberSecret(ctx, m.cluster, v.ns, m.name+"-kubeconfig", framework.MemberServices); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client(m.cluster, framework.UserAdmin).CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	go env.KeepKiloNodesFresh(t.Context(), viewsSettle/2)
	env.KubectlInT(t, 1, framework.UserAdmin, cartService, "apply", "-f", "-")
	for _, p := range cartPods {
		p.Labels = map[string]string{"app": "cart"}
		if _, err := env.CreateReadyPod(ctx, 1, "shop", p); err != nil {
			t.Fatal(err)
		}
	}
	env.KubectlInT(t, framework.HostCluster, framework.UserTenantA, servicesViewMesh, "-n", v.ns, "create", "-f", "-")
	return v
}

func (v *servicesViewEnv) kubectl(user string, args ...string) (string, error) {
	out, stderr, err := v.env.Kubectl(context.Background(), framework.HostCluster, user, args...)
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, stderr)
	}
	return out, nil
}

// raw GETs clustermeshes/shop/PATH as user.
func (v *servicesViewEnv) raw(user, path string) (string, error) {
	return v.kubectl(user, "get", "--raw", "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"+v.ns+"/clustermeshes/shop/"+path)
}

// services reads the services view as viewer-a, who has the view role.
func (v *servicesViewEnv) services(query string) (*meshv1alpha1.ClusterMeshServices, error) {
	out, err := v.raw(framework.UserViewerA, "services"+query)
	if err != nil {
		return nil, err
	}
	s := &meshv1alpha1.ClusterMeshServices{}
	if err := json.Unmarshal([]byte(out), s); err != nil {
		return nil, fmt.Errorf("decoding the services view: %w\n%s", err, out)
	}
	return s, nil
}

// importOf is the import of shop/cart in cluster, or nil.
func importOf(s *meshv1alpha1.ClusterMeshServices, cluster string) *meshv1alpha1.ImportState {
	for _, c := range s.Clusters {
		if c.Cluster != cluster {
			continue
		}
		for i := range c.Imports {
			if c.Imports[i].Namespace == "shop" && c.Imports[i].Name == "cart" {
				return &c.Imports[i]
			}
		}
	}
	return nil
}
