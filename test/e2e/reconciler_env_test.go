//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

const (
	rcClusters = 3
	// rcConverge bounds how long any change may take to show on every
	// cluster; the benchmark measures the real figure.
	rcConverge = 30 * time.Second
	// rcDeletionTimeout is the server's --mesh-deletion-timeout here.
	rcDeletionTimeout = 30 * time.Second
)

// rcEnv is the reconciler's environment: its own three clusters and server.
type rcEnv struct {
	env    *framework.Env
	server *framework.MeshServer
	ns     string
	// keys holds every Kilo node's public key, by cluster and node name.
	keys [rcClusters]map[string]string
}

func startReconcilerEnv(t *testing.T, server ...func(*framework.MeshServerOptions)) *rcEnv {
	t.Helper()
	env := framework.StartT(t, framework.Options{Clusters: rcClusters})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// kg checks in every 30 s; nodes silent for 60 s drop out of the mesh.
	go env.KeepKiloNodesFresh(ctx, 15*time.Second)

	rc := &rcEnv{env: env}
	opts := framework.MeshServerOptions{
		// On the shared etcd, so that a second replica can join it.
		ExternalEtcd: true,
		ExtraArgs:    rcServerArgs(),
	}
	for _, f := range server {
		f(&opts)
	}
	rc.server = env.StartMeshServerT(t, opts)
	ns, err := env.NewNamespace(ctx, "mesh")
	if err != nil {
		t.Fatal(err)
	}
	rc.ns = ns
	for i := 1; i < rcClusters; i++ {
		if _, err := env.CreateKubeconfigSecret(ctx, ns, fmt.Sprintf("cluster-%d-kubeconfig", i), i, framework.UserAdmin); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rcClusters {
		rc.keys[i] = map[string]string{}
		for _, k := range rcNodes(i) {
			n, err := env.CreateKiloNode(ctx, i, k)
			if err != nil {
				t.Fatal(err)
			}
			rc.keys[i][n.Name] = n.Annotations[kilov1alpha1.AnnotationKey]
		}
	}
	return rc
}

func rcServerArgs() []string {
	return []string{
		"--mesh-deletion-timeout=" + rcDeletionTimeout.String(),
		"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
		"-v=2",
	}
}

// rcNodes are the Kilo nodes of cluster i: location a with two nodes (a1
// leads: the first by name with a public endpoint), location b with one,
// and one node kg does not count (no pod CIDR).
func rcNodes(i int) []framework.KiloNode {
	node := func(name, location string, host, wgHost int) framework.KiloNode {
		k := framework.KiloNode{
			Name:       fmt.Sprintf("c%d-%s", i, name),
			Location:   location,
			Endpoint:   fmt.Sprintf("203.0.113.%d:51820", 10*i+host),
			InternalIP: fmt.Sprintf("192.168.%d.%d/24", i, host),
			PodCIDR:    fmt.Sprintf("10.%d.%d.0/24", 10+i, host),
		}
		if wgHost > 0 {
			k.WireGuardIP = fmt.Sprintf("10.%d.0.%d/16", 40+i, wgHost)
		}
		return k
	}
	nopod := node("nopod", "b", 9, 0)
	nopod.PodCIDR = ""
	return []framework.KiloNode{node("a1", "a", 1, 1), node("a2", "a", 2, 0), node("b1", "b", 3, 2), nopod}
}

func clusterName(i int) string { return fmt.Sprintf("cluster-%d", i) }

func (rc *rcEnv) dyn(i int) dynamic.Interface { return rc.env.Dynamic(i, framework.UserAdmin) }

func (rc *rcEnv) kube(i int) kubernetes.Interface { return rc.env.Client(i, framework.UserAdmin) }

func (rc *rcEnv) createMesh(t *testing.T, name string) *meshv1alpha1.ClusterMesh {
	t.Helper()
	b, err := yaml.YAMLToJSON([]byte(manifest(t, "reconciler-mesh.yaml", name)))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	u, err := rc.meshes().Create(context.Background(), toUnstructured(obj), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ClusterMesh %s: %v", name, err)
	}
	mesh := &meshv1alpha1.ClusterMesh{}
	fromUnstructured(t, u.Object, mesh)
	return mesh
}

func (rc *rcEnv) meshes() dynamic.ResourceInterface {
	return rc.dyn(framework.HostCluster).Resource(framework.ClusterMeshGVR).Namespace(rc.ns)
}

// mesh reads a mesh through the aggregation layer; nil if it is gone.
func (rc *rcEnv) mesh(t *testing.T, name string) *meshv1alpha1.ClusterMesh {
	t.Helper()
	u, err := rc.meshes().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading ClusterMesh %s: %v", name, err)
	}
	mesh := &meshv1alpha1.ClusterMesh{}
	fromUnstructured(t, u.Object, mesh)
	return mesh
}

func wantCondition(mesh *meshv1alpha1.ClusterMesh, typ string, status metav1.ConditionStatus, reason string) error {
	if mesh == nil {
		return errors.New("the mesh is gone")
	}
	c := meta.FindStatusCondition(mesh.Status.Conditions, typ)
	switch {
	case c == nil:
		return fmt.Errorf("no %s condition yet (%+v)", typ, mesh.Status.Conditions)
	case c.Status != status || reason != "" && c.Reason != reason:
		return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	case c.ObservedGeneration != mesh.Generation:
		return fmt.Errorf("%s describes generation %d, the mesh is at %d", typ, c.ObservedGeneration, mesh.Generation)
	}
	return nil
}

// events returns the messages of the mesh's events with reason.
func (rc *rcEnv) events(t *testing.T, mesh, reason string) []string {
	t.Helper()
	list, err := rc.kube(framework.HostCluster).CoreV1().Events(rc.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + mesh + ",reason=" + reason,
	})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.APIVersion == meshv1alpha1.SchemeGroupVersion.String() && e.InvolvedObject.Kind == "ClusterMesh" {
			out = append(out, e.Message)
		}
	}
	return out
}

// scrape reads /metrics of the API server cfg points at.
func scrape(t *testing.T, cfg *rest.Config) []byte {
	t.Helper()
	raw, err := framework.Scrape(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func toUnstructured(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

func fromUnstructured(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		t.Fatalf("converting %T: %v", into, err)
	}
}
