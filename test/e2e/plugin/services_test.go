//go:build e2e

package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// servicesSettle bounds how long an export takes to show in the view.
const servicesSettle = 60 * time.Second

const servicesMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: shop
spec:
  clusters:
  - name: west
    kubeconfigSecretRef: {name: west-kubeconfig}
    podCIDRs: ["10.52.0.0/16"]
    wireguardCIDR: 10.5.0.0/16
  - name: north
    kubeconfigSecretRef: {name: north-kubeconfig}
    podCIDRs: ["10.62.0.0/16"]
    wireguardCIDR: 10.6.0.0/16
`

const servicesCart = `apiVersion: v1
kind: Service
metadata: {name: cart, namespace: shop}
spec:
  selector: {app: cart}
  ports: [{name: http, port: 80, protocol: TCP}]
---
apiVersion: multicluster.x-k8s.io/v1beta1
kind: ServiceExport
metadata: {name: cart, namespace: shop}
`

// servicesMembers makes clusters 1 and 2 the members west and north of a
// services mesh in namespace ns: one Kilo node each, kept Ready, their
// member identities' kubeconfig Secrets, and the namespace shop.
func servicesMembers(t *testing.T, env *framework.Env, ns string) {
	t.Helper()
	ctx := context.Background()
	for cluster, name := range map[int]string{1: "west", 2: "north"} {
		node := framework.KiloNode{Name: name + "-1", Location: name, Leader: true, Endpoint: fmt.Sprintf("192.0.2.%d:51820", cluster),
			InternalIP: fmt.Sprintf("192.168.%d.1/24", cluster), PodCIDR: fmt.Sprintf("10.%d2.1.0/24", 4+cluster)}
		if _, err := env.CreateKiloNode(ctx, cluster, node); err != nil {
			t.Fatal(err)
		}
		// Else kube-controller-manager marks the Node Unknown after its
		// grace period and the Pods on it not ready.
		go env.KeepNodesReady(t.Context(), 10*time.Second, cluster, node.Name)
		if err := env.CreateMemberSecret(ctx, cluster, ns, name+"-kubeconfig", framework.MemberChartServices); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client(cluster, framework.UserAdmin).CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServices: kubectl mesh services and why ... service over a real
// server and two member clusters, west exporting shop/cart from Pods its
// own endpointslice controller lists (one addressed outside west's
// podCIDRs).
func TestServices(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 3})
	env.StartMeshServerT(t, framework.MeshServerOptions{})
	ctx := context.Background()
	ns, err := env.NewNamespace(ctx, "services")
	if err != nil {
		t.Fatal(err)
	}
	servicesMembers(t, env, ns)
	for _, p := range []framework.ReadyPod{{Name: "cart-1", IP: "10.52.1.5"}, {Name: "cart-2", IP: "10.99.0.7"}} {
		p.Node, p.Labels = "west-1", map[string]string{"app": "cart"}
		if _, err := env.CreateReadyPod(ctx, 1, "shop", p); err != nil {
			t.Fatal(err)
		}
	}
	env.KubectlInT(t, 1, framework.UserAdmin, servicesCart, "apply", "-f", "-")
	env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, servicesMesh, "apply", "-n", ns, "-f", "-")

	t.Run("a mesh without services: the server's clear error", func(t *testing.T) {
		framework.EventuallyT(t, servicesSettle, "services refusing a mesh with services disabled", func() error {
			r := mesh(t, env, framework.UserAdmin, "services", "shop", "-n", ns)
			if r.code != 1 || !strings.Contains(r.stderr, "clustermesh "+ns+"/shop does not carry services") {
				return fmt.Errorf("want exit 1 saying services are not enabled, got %s", r)
			}
			return nil
		})
	})
	env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", ns, "patch", "clustermesh", "shop", "--type=merge", "-p", `{"spec":{"multiClusterServices":"Enabled"}}`)

	raw := func() *meshv1alpha1.ClusterMeshServices {
		out := env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "get", "--raw", "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"+ns+"/clustermeshes/shop/services")
		v := &meshv1alpha1.ClusterMeshServices{}
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("the view is not JSON: %v\n%s", err, out)
		}
		return v
	}
	t.Run("-o json parses and is the view", func(t *testing.T) {
		framework.EventuallyT(t, servicesSettle, "the import in both clusters, printed as the server serves it", func() error {
			before := raw()
			r := mustMesh(t, env, framework.UserAdmin, "services", "shop", "-n", ns, "-o", "json")
			after := raw()
			printed := &meshv1alpha1.ClusterMeshServices{}
			if err := json.Unmarshal([]byte(r.stdout), printed); err != nil {
				t.Fatalf("-o json does not parse: %v\n%s", err, r)
			}
			if printed.Kind != "ClusterMeshServices" || printed.APIVersion != meshv1alpha1.SchemeGroupVersion.String() {
				t.Errorf("-o json prints kind %q, apiVersion %q", printed.Kind, printed.APIVersion)
			}
			// The later subtests read west's endpoints once: await them too,
			// as the server's caches may start before the slice lists both Pods.
			if len(printed.Clusters) != 2 || len(printed.Clusters[0].Imports) != 1 || len(printed.Clusters[1].Imports) != 1 || len(printed.Exports) != 1 ||
				printed.Exports[0].Endpoints != 1 {
				return fmt.Errorf("not imported everywhere yet: %s", r.stdout)
			}
			// Each GET is computed at its own time; the rest is the view.
			printed.GeneratedAt, before.GeneratedAt, after.GeneratedAt = metav1.Time{}, metav1.Time{}, metav1.Time{}
			a, _ := json.Marshal(printed)
			b, _ := json.Marshal(before)
			c, _ := json.Marshal(after)
			if string(a) != string(b) || string(a) != string(c) {
				return fmt.Errorf("-o json differs from the view:\n%s\n%s", a, b)
			}
			return nil
		})
		r := mustMesh(t, env, framework.UserAdmin, "services", "shop", "-n", ns, "-o", "yaml")
		var v meshv1alpha1.ClusterMeshServices
		if err := yaml.UnmarshalStrict([]byte(r.stdout), &v); err != nil || v.Kind != "ClusterMeshServices" || len(v.Clusters) != 2 {
			t.Errorf("-o yaml (%v):\n%s", err, r)
		}
	})

	t.Run("human output: imports per cluster, each export's outcome", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "services", "shop", "-n", ns)
		for _, want := range []string{"ClusterMesh " + ns + "/shop, services computed at ", "Cluster north\n  imports shop/cart (ClusterSetIP)",
			"ports http:80/TCP, 1 endpoints from west\n", "shop/cart of west: exported, 1 endpoints; left out: 1 OutsidePodCIDRs\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("services lacks %q:\n%s", want, r)
			}
		}
		r = mustMesh(t, env, framework.UserAdmin, "services", "shop", "-n", ns, "--cluster", "north")
		if !strings.Contains(r.stdout, "Cluster north\n") || strings.Contains(r.stdout, "Cluster west") || !strings.Contains(r.stdout, "No ServiceExport in cluster north.") {
			t.Errorf("services --cluster north:\n%s", r)
		}
		r = mesh(t, env, framework.UserAdmin, "services", "shop", "-n", ns, "--cluster", "nowhere")
		if r.code != 1 || !strings.Contains(r.stderr, `cluster "nowhere" is not a member`) {
			t.Errorf("services --cluster nowhere: want the server's message, got %s", r)
		}
	})

	t.Run("why explains the export and each left-out reason", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "why", "shop", "service", "shop/cart", "-n", ns)
		for _, want := range []string{"Service shop/cart\n", "export of west: exported (Valid), 1 endpoints carried\n",
			"1 endpoints left out, OutsidePodCIDRs: the address is not inside the exporting cluster's declared podCIDRs",
			"in north: imports shop/cart (ClusterSetIP)"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("why service lacks %q:\n%s", want, r)
			}
		}
		r = mustMesh(t, env, framework.UserAdmin, "why", "shop", "service", "shop/cart", "-n", ns, "-o", "json")
		var data struct {
			Exports []meshv1alpha1.ExportState `json:"exports"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &data); err != nil || len(data.Exports) != 1 || data.Exports[0].Cluster != "west" {
			t.Errorf("why service -o json (%v):\n%s", err, r)
		}
		r = mesh(t, env, framework.UserAdmin, "why", "shop", "service", "shop/none", "-n", ns)
		if r.code != 1 || !strings.Contains(r.stderr, "no ServiceExport shop/none in any member cluster") {
			t.Errorf("why of a service nobody exports: %s", r)
		}
	})

	t.Run("one not-found wording; completion", func(t *testing.T) {
		want := "clustermesh " + ns + "/nomesh not found (is the namespace right? use -n)"
		for _, args := range [][]string{{"services", "nomesh"}, {"why", "nomesh", "service", "shop/cart"}} {
			r := mesh(t, env, framework.UserAdmin, append(args, "-n", ns)...)
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("%s: want exit 1 with %q, got %s", strings.Join(args, " "), want, r)
			}
		}
		out := env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "__complete", "mesh", "services", "-n", ns, "")
		if !strings.Contains(out, "shop\n") {
			t.Errorf("completing a mesh of services:\n%s", out)
		}
		out = env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "__complete", "mesh", "why", "shop", "service", "-n", ns, "shop/")
		if !strings.Contains(out, "shop/cart\n") {
			t.Errorf("completing a service of why:\n%s", out)
		}
	})
}
