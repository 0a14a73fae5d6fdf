//go:build e2e

package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// meshManifest joins cluster 0 (local) and cluster 1 (kubeconfig Secret
// cluster-1-kubeconfig); the networks match smokeNode.
const meshManifest = `
apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: smoke
spec:
  clusters:
  - name: cluster-0
    local: true
    podCIDRs: ["10.10.0.0/16"]
    serviceCIDR: 10.96.0.0/16
    wireguardCIDR: 10.40.0.0/16
  - name: cluster-1
    kubeconfigSecretRef:
      name: cluster-1-kubeconfig
    podCIDRs: ["10.11.0.0/16"]
    serviceCIDR: 10.97.0.0/16
    wireguardCIDR: 10.41.0.0/16
`

// smokeMesh is meshManifest named name, reaching cluster 1 with the
// kubeconfig of Secret secret.
func smokeMesh(t *testing.T, name, secret string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(meshManifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.SetName(name)
	clusters := obj.Object["spec"].(map[string]any)["clusters"].([]any)
	clusters[1].(map[string]any)["kubeconfigSecretRef"] = map[string]any{"name": secret}
	return obj
}

// smokeNode is a location leader of cluster i as kg leaves it.
func smokeNode(i int) framework.KiloNode {
	return framework.KiloNode{
		Name:        fmt.Sprintf("smoke-%d", i),
		Location:    "a",
		Endpoint:    fmt.Sprintf("203.0.113.%d:51820", 10+i),
		InternalIP:  fmt.Sprintf("192.168.%d.1/24", i),
		PodCIDR:     fmt.Sprintf("10.%d.1.0/24", 10+i),
		WireGuardIP: fmt.Sprintf("10.%d.0.1/16", 40+i),
		Leader:      true,
	}
}

// createMesh creates the smoke mesh in a new namespace, with the member's
// kubeconfig Secret, through client; it returns the mesh.
func createMesh(t *testing.T, ctx context.Context, create func(*unstructured.Unstructured) (*unstructured.Unstructured, error)) *unstructured.Unstructured {
	t.Helper()
	ns, err := env.NewNamespace(ctx, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.CreateKubeconfigSecret(ctx, ns, "cluster-1-kubeconfig", 1, admin); err != nil {
		t.Fatal(err)
	}
	obj := smokeMesh(t, "smoke", "cluster-1-kubeconfig")
	obj.SetNamespace(ns)
	mesh, err := create(obj)
	if err != nil {
		t.Fatalf("creating ClusterMesh %s/smoke: %v", ns, err)
	}
	return mesh
}

// TestImageBinaryServesAMesh is the smoke test of the image: its binary,
// started as the default install starts it (embedded etcd, self-managed
// certificate, no certificate flags), registers through the aggregation
// layer, serves a mesh created with kubectl and writes its Peers on both
// clusters.
func TestImageBinaryServesAMesh(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ensureSmokeNodes(t, ctx)
	fresh, stopFresh := context.WithCancel(ctx)
	defer stopFresh()
	go env.KeepKiloNodesFresh(fresh, 15*time.Second)

	// As on a fresh cluster: the Secret as shipped.
	emptyServingCertSecret(t, ctx)
	startServer(t, framework.MeshServerOptions{SelfManagedCert: true})
	meshes := env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR)
	mesh := createMesh(t, ctx, func(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return meshes.Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	})
	out, stderr, err := env.Kubectl(ctx, framework.HostCluster, admin, "-n", mesh.GetNamespace(), "get", "clustermeshes")
	if err != nil || !strings.Contains(out, "smoke") {
		t.Fatalf("kubectl get clustermeshes through the aggregator: %v\n%s%s", err, out, stderr)
	}

	// Each cluster gets a Peer of the mesh for the other cluster's leader,
	// routing its pod CIDR.
	for i := range 2 {
		other := smokeNode(1 - i)
		err := framework.Eventually(ctx, 250*time.Millisecond, time.Minute, func(ctx context.Context) error {
			peers, err := env.Dynamic(i, admin).Resource(kilov1alpha1.PeerResource).List(ctx, metav1.ListOptions{
				LabelSelector: planner.LabelMeshUID + "=" + string(mesh.GetUID()),
			})
			if err != nil {
				return err
			}
			for _, p := range peers.Items {
				allowed, _, _ := unstructured.NestedStringSlice(p.Object, "spec", "allowedIPs")
				if slices.Contains(allowed, other.PodCIDR) {
					return nil
				}
			}
			return fmt.Errorf("%d Peers of the mesh, none routes %s", len(peers.Items), other.PodCIDR)
		})
		if err != nil {
			t.Fatalf("cluster %d: %v", i, err)
		}
	}
	// Its Peers would conflict with the later tests' meshes on the same clusters.
	deleteMesh(t, ctx, mesh.GetNamespace(), mesh.GetName())
}
