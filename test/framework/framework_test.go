//go:build e2e

package framework_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"a": "b"}}
}

func TestEnvironment(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("peer CRD on every cluster", func(t *testing.T) {
		for i := range env.NumClusters() {
			peers := env.Dynamic(i, framework.UserAdmin).Resource(framework.PeerGVR)
			if _, err := peers.List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("cluster %d: listing peers: %v", i, err)
			}
			_, pub, err := framework.NewWireGuardKey()
			if err != nil {
				t.Fatal(err)
			}
			peer := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "kilo.squat.ai/v1alpha1",
				"kind":       "Peer",
				"metadata":   map[string]any{"name": "self-test"},
				"spec": map[string]any{
					"allowedIPs": []any{"10.10.0.0/24"},
					"publicKey":  pub,
					"endpoint":   map[string]any{"dnsOrIP": map[string]any{"ip": "192.0.2.1"}, "port": int64(51820)},
				},
			}}
			if _, err := peers.Create(ctx, peer, metav1.CreateOptions{}); err != nil {
				t.Fatalf("cluster %d: creating a valid peer: %v", i, err)
			}
			// The schema is enforced: spec is required.
			bad := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "kilo.squat.ai/v1alpha1",
				"kind":       "Peer",
				"metadata":   map[string]any{"name": "no-spec"},
			}}
			if _, err := peers.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
				t.Errorf("cluster %d: creating a peer without spec: got %v, want Invalid", i, err)
			}
		}
		// The clusters are isolated from each other.
		if _, err := env.Dynamic(1, framework.UserAdmin).Resource(framework.PeerGVR).Get(ctx, "self-test", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		ns, err := env.NewNamespaceOn(ctx, 1, "only-on-1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client(0, framework.UserAdmin).CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s of cluster 1 on cluster 0: got %v, want NotFound", ns, err)
		}
	})

	t.Run("tenant RBAC", func(t *testing.T) {
		a := env.Client(framework.HostCluster, framework.UserTenantA).CoreV1()
		if _, err := a.ConfigMaps(framework.NamespaceTenantA).Create(ctx, configMap("mine"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("tenant-a creating a configmap in tenant-a: %v", err)
		}
		if _, err := a.ConfigMaps(framework.NamespaceTenantB).Create(ctx, configMap("theirs"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("tenant-a creating a configmap in tenant-b: got %v, want Forbidden", err)
		}
		b := env.Client(framework.HostCluster, framework.UserTenantB).CoreV1()
		if _, err := b.ConfigMaps(framework.NamespaceTenantB).Create(ctx, configMap("mine"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("tenant-b creating a configmap in tenant-b: %v", err)
		}
		v := env.Client(framework.HostCluster, framework.UserViewerA).CoreV1()
		if _, err := v.ConfigMaps(framework.NamespaceTenantA).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("viewer-a listing configmaps in tenant-a: %v", err)
		}
		if _, err := v.ConfigMaps(framework.NamespaceTenantA).Create(ctx, configMap("nope"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("viewer-a creating a configmap in tenant-a: got %v, want Forbidden", err)
		}
		// Tenants have no rights on member clusters.
		if _, err := env.Client(1, framework.UserTenantA).CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("tenant-a listing nodes of cluster 1: got %v, want Forbidden", err)
		}

		// The same through the real kubectl and the kubeconfig files.
		out, _, err := env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil || out != framework.UserTenantA {
			t.Errorf("kubectl auth whoami: %q, %v", out, err)
		}
		_, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "-n", framework.NamespaceTenantB, "create", "configmap", "x")
		if err == nil || !strings.Contains(stderr, "forbidden") {
			t.Errorf("kubectl create configmap in tenant-b as tenant-a: err %v, stderr %q", err, stderr)
		}
		if _, _, err := env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "-n", framework.NamespaceTenantA, "create", "configmap", "x"); err != nil {
			t.Error(err)
		}
		out, _, err = env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "version", "-o", "json")
		if err != nil || !strings.Contains(out, `"gitVersion": "`+framework.KubeVersion+`"`) {
			t.Errorf("kubectl version: %v\n%s", err, out)
		}

		ns, err := env.NewNamespace(ctx, "fresh")
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := env.Can(ctx, framework.HostCluster, framework.UserTenantA, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "configmaps"}); err != nil || ok {
			t.Errorf("tenant-a in fresh namespace %s before a grant: %v, %v", ns, ok, err)
		}
		if err := env.GrantNamespaceRole(ctx, framework.HostCluster, ns, framework.UserTenantA, "edit"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ConfigMaps(ns).Create(ctx, configMap("granted"), metav1.CreateOptions{}); err != nil {
			t.Errorf("tenant-a in %s after the grant: %v", ns, err)
		}
	})

	t.Run("kilo nodes", func(t *testing.T) {
		node, err := env.CreateKiloNode(ctx, 1, framework.KiloNode{
			Name:        "node-a",
			Location:    "eu",
			Endpoint:    "203.0.113.10:51820",
			InternalIP:  "192.168.10.2/24",
			WireGuardIP: "10.5.0.1/16",
			PodCIDR:     "10.64.1.0/24",
			Leader:      true,
			ExternalIP:  "203.0.113.10",
		})
		if err != nil {
			t.Fatal(err)
		}
		if node.Spec.PodCIDR != "10.64.1.0/24" || node.Annotations[kilov1alpha1.AnnotationLocation] != "eu" ||
			len(node.Annotations[kilov1alpha1.AnnotationKey]) != 44 {
			t.Errorf("unexpected node %+v", node.ObjectMeta)
		}
		if len(node.Status.Conditions) != 1 || node.Status.Conditions[0].Status != corev1.ConditionTrue ||
			node.Status.Addresses[0].Address != "192.168.10.2" {
			t.Errorf("unexpected node status %+v", node.Status)
		}
		if len(node.Spec.Taints) != 0 {
			t.Errorf("unexpected taints on a Ready node: %v", node.Spec.Taints)
		}
		old := node.Annotations[kilov1alpha1.AnnotationLastSeen]
		time.Sleep(1100 * time.Millisecond)
		if err := env.TouchKiloNodes(ctx, 1); err != nil {
			t.Fatal(err)
		}
		got, err := env.Client(1, framework.UserAdmin).CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Annotations[kilov1alpha1.AnnotationLastSeen] == old {
			t.Errorf("last-seen not refreshed: %s", old)
		}
	})

	t.Run("stop and restart a member cluster", func(t *testing.T) {
		c1 := env.Client(1, framework.UserAdmin).CoreV1()
		if _, err := c1.ConfigMaps("default").Create(ctx, configMap("survives"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := env.StopCluster(1); err != nil {
			t.Fatal(err)
		}
		if _, err := c1.ConfigMaps("default").Get(ctx, "survives", metav1.GetOptions{}); err == nil {
			t.Fatal("cluster 1 still answers after StopCluster")
		}
		// The host cluster is unaffected.
		if _, err := env.Client(0, framework.UserAdmin).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := env.StartCluster(ctx, 1); err != nil {
			t.Fatal(err)
		}
		t.Logf("cluster 1 back in %s", time.Since(start).Round(time.Millisecond))
		if _, err := c1.ConfigMaps("default").Get(ctx, "survives", metav1.GetOptions{}); err != nil {
			t.Fatalf("data after restart: %v", err)
		}
	})

	t.Run("deploy manifests", func(t *testing.T) {
		root, err := framework.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "artifacts", "deploy")
		if _, _, err := env.Kubectl(ctx, 1, framework.UserAdmin, "kustomize", dir); err != nil {
			t.Fatal(err)
		}
		// Creating the namespace for real lets the dry run check the
		// namespaced objects too.
		if _, _, err := env.Kubectl(ctx, 1, framework.UserAdmin, "apply", "-k", filepath.Join(root, "artifacts", "namespace")); err != nil {
			t.Fatal(err)
		}
		out, _, err := env.Kubectl(ctx, 1, framework.UserAdmin, "apply", "--dry-run=server", "-k", dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl apply --dry-run=server -k artifacts/deploy:\n%s", out)
	})

	t.Run("mcs-api CRDs on one cluster", func(t *testing.T) {
		exports := schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceexports"}
		if _, err := env.Dynamic(0, framework.UserAdmin).Resource(exports).List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("cluster 0 serves ServiceExports before the helper ran (list: %v)", err)
		}
		if err := env.InstallMCSCRDs(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Dynamic(1, framework.UserAdmin).Resource(exports).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("listing ServiceExports after InstallMCSCRDs: %v", err)
		}
	})
}

// TestMeshServer runs the real kilo-mesh-apiserver behind the aggregation
// layer with the RBAC of artifacts/deploy.
func TestMeshServer(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	start := time.Now()
	m := env.StartMeshServerT(t, framework.MeshServerOptions{})
	t.Logf("kilo-mesh-apiserver available in %s (log %s)", time.Since(start).Round(time.Millisecond), m.LogPath)

	out, _, err := env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "api-resources", "--api-group="+framework.MeshGroup, "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl api-resources --api-group=%s:\n%s", framework.MeshGroup, out)
	if !strings.Contains(out, "clustermeshes") || !strings.Contains(out, "cmesh") || !strings.Contains(out, "ClusterMesh") {
		t.Errorf("clustermeshes missing from api-resources")
	}

	// The aggregated roles of artifacts/deploy/user-roles.yaml reach the
	// tenants through edit and view.
	for _, c := range []struct {
		user, ns, verb string
		want           bool
	}{
		{framework.UserTenantA, framework.NamespaceTenantA, "create", true},
		{framework.UserTenantA, framework.NamespaceTenantB, "list", false},
		{framework.UserViewerA, framework.NamespaceTenantA, "list", true},
		{framework.UserViewerA, framework.NamespaceTenantA, "create", false},
	} {
		ok, err := env.Can(ctx, framework.HostCluster, c.user, authorizationv1.ResourceAttributes{
			Namespace: c.ns, Verb: c.verb, Group: framework.MeshGroup, Resource: "clustermeshes",
		})
		if err != nil || ok != c.want {
			t.Errorf("%s %s clustermeshes in %s: allowed=%v (%v), want %v", c.user, c.verb, c.ns, ok, err, c.want)
		}
	}
	if _, _, err := env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "-n", framework.NamespaceTenantA, "get", "clustermeshes"); err != nil {
		t.Errorf("tenant-a listing clustermeshes in tenant-a: %v", err)
	}
	_, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "-n", framework.NamespaceTenantB, "get", "cmesh")
	if err == nil || !strings.Contains(stderr, "forbidden") {
		t.Errorf("tenant-a listing clustermeshes in tenant-b: err %v, stderr %q", err, stderr)
	}

	// Restart on the same data dir and port.
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if m.Running() {
		t.Fatal("server still running after Stop")
	}
	if err := m.Start(ctx); err != nil {
		t.Fatalf("restarting: %v\n%s", err, m.LogTail(40))
	}
	if _, _, err := env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "get", "clustermeshes", "-A"); err != nil {
		t.Errorf("after restart: %v", err)
	}
	if strings.Contains(m.Logs(), "forbidden") {
		t.Errorf("the server met Forbidden errors with the RBAC of artifacts/deploy:\n%s", grepLines(m.Logs(), "forbidden"))
	}
}

// TestMeshServerRestartDiscovery: once Start returns, kubectl resolves the
// group's short name at once. A stopped server leaves its group stale in the
// host's aggregated discovery, where kubectl looks it up, for as long as the
// aggregator's backoff lasts; Start waits for it, not the test.
func TestMeshServerRestartDiscovery(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := env.StartMeshServerT(t, framework.MeshServerOptions{})
	for i := range 3 {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := m.Start(ctx); err != nil {
			t.Fatalf("restart %d: %v\n%s", i, err, m.LogTail(40))
		}
		if _, _, err := env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "-n", framework.NamespaceTenantA, "get", "cmesh"); err != nil {
			t.Errorf("restart %d: %v", i, err)
		}
	}
}

// TestMeshServerExternalEtcd runs the server on the environment's etcd
// (--etcd-servers, unique --etcd-prefix) instead of its embedded etcd.
func TestMeshServerExternalEtcd(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := env.StartMeshServerT(t, framework.MeshServerOptions{ExternalEtcd: true})
	if m.EtcdPrefix == "" || m.DataDir != "" {
		t.Errorf("external etcd: prefix %q, data dir %q", m.EtcdPrefix, m.DataDir)
	}
	if _, _, err := env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "get", "clustermeshes", "-A"); err != nil {
		t.Fatal(err)
	}
	// Kill without a graceful shutdown, start again: still served.
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatalf("restarting: %v\n%s", err, m.LogTail(40))
	}
	if _, _, err := env.Kubectl(ctx, framework.HostCluster, framework.UserViewerA, "-n", framework.NamespaceTenantA, "get", "clustermeshes"); err != nil {
		t.Fatal(err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
