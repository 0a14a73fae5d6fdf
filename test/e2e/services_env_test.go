//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// svcConverge bounds how long an export takes to show everywhere.
const svcConverge = 30 * time.Second

// The server's limits here: low, so that the attacks cross them cheaply.
const (
	svcMaxExports   = 12
	svcMaxEndpoints = 20
)

// svcServiceCIDRs make the members dual-stack, so that an import's IPs
// (one per family) are those of a real dual-stack derived Service.
var svcServiceCIDRs = []string{"", "10.97.0.0/16,fd00:97::/112", "10.98.0.0/16,fd00:98::/112"}

// svcMesh joins clusters 1 and 2 (the host runs the server and is not a
// member: its own identity has no services rights) with services enabled.
// Cluster 2 is reached as the shipped member identity.
const svcMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: svc
spec:
  multiClusterServices: Enabled
  clusters:
  - name: one
    kubeconfigSecretRef: {name: one-kubeconfig}
    podCIDRs: ["10.11.0.0/16"]
    wireguardCIDR: 10.41.0.0/16
  - name: two
    kubeconfigSecretRef: {name: two-kubeconfig}
    podCIDRs: ["10.12.0.0/16"]
    wireguardCIDR: 10.42.0.0/16
`

// svcEnv is the services environment: three clusters, the server, the
// mcs-api CRDs on the two members, and one Node on each whose kubelet the
// test plays (it keeps the Node Ready, so its Pods stay Ready).
type svcEnv struct {
	env    *framework.Env
	server *framework.MeshServer
	ns     string
}

func startServicesEnv(t *testing.T) *svcEnv {
	t.Helper()
	env := framework.StartT(t, framework.Options{Clusters: 3, ServiceCIDRs: svcServiceCIDRs})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// External etcd: a test deletes a mesh's key behind the server's back.
	s := &svcEnv{env: env, server: env.StartMeshServerT(t, framework.MeshServerOptions{ExternalEtcd: true, ExtraArgs: []string{"-v=2",
		fmt.Sprintf("--max-service-exports-per-cluster=%d", svcMaxExports), fmt.Sprintf("--max-endpoints-per-service=%d", svcMaxEndpoints)}})}
	t.Cleanup(func() {
		if strings.Contains(s.server.Logs(), "is forbidden") {
			t.Errorf("the server met Forbidden errors with the shipped RBAC (artifacts/deploy, artifacts/member)")
		}
	})
	var err error
	if s.ns, err = env.NewNamespace(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if err := env.InstallMCSCRDs(ctx, i); err != nil {
			t.Fatal(err)
		}
		node := framework.KiloNode{Name: svcNode(i), Location: "a", Endpoint: fmt.Sprintf("203.0.113.%d:51820", i),
			InternalIP: fmt.Sprintf("192.168.%d.1/24", i), WireGuardIP: fmt.Sprintf("10.4%d.0.1/16", i), PodCIDR: fmt.Sprintf("10.1%d.1.0/24", i)}
		if _, err := env.CreateKiloNode(ctx, i, node); err != nil {
			t.Fatal(err)
		}
		go s.keepNodeReady(ctx, i)
	}
	if _, err := env.CreateKubeconfigSecret(ctx, s.ns, "one-kubeconfig", 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	if err := env.CreateMemberSecret(ctx, 2, s.ns, "two-kubeconfig", framework.MemberServices); err != nil {
		t.Fatal(err)
	}
	env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, svcMesh, "-n", s.ns, "create", "-f", "-")
	return s
}

func svcNode(cluster int) string { return fmt.Sprintf("svc-node-%d", cluster) }

// keepNodeReady heartbeats the Node's Ready condition as a kubelet would,
// so that the node lifecycle controller never marks its Pods not ready.
func (s *svcEnv) keepNodeReady(ctx context.Context, cluster int) {
	nodes := s.kube(cluster).CoreV1().Nodes()
	for {
		if n, err := nodes.Get(ctx, svcNode(cluster), metav1.GetOptions{}); err == nil {
			now := metav1.Now()
			setNodeCondition(n, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: now, LastTransitionTime: now})
			_, _ = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

func setNodeCondition(n *corev1.Node, c corev1.NodeCondition) {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == c.Type {
			c.LastTransitionTime = n.Status.Conditions[i].LastTransitionTime
			n.Status.Conditions[i] = c
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, c)
}

func (s *svcEnv) kube(i int) kubernetes.Interface { return s.env.Client(i, framework.UserAdmin) }

func (s *svcEnv) mcs(i int) mcsclient.Interface {
	return mcsclient.NewForConfigOrDie(s.env.RESTConfig(i, framework.UserAdmin))
}

// namespace creates one namespace of the same new name in clusters.
func (s *svcEnv) namespace(t *testing.T, clusters ...int) string {
	t.Helper()
	name := framework.UniqueName("shop")
	ctx := context.Background()
	for _, i := range clusters {
		if _, err := s.kube(i).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Pods need it; the controller manager makes it, but later after a
		// restart of its API server (testClusterSetIP stops one).
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
		if _, err := s.kube(i).CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	return name
}

// backend creates in cluster a Service selecting Pods named for it, and
// one Pod per IP, made Running and Ready through the status subresource as
// a kubelet would; the cluster's endpointslice controller does the rest.
func (s *svcEnv) backend(t *testing.T, cluster int, ns, name string, ips []string, mutate func(*corev1.Service)) {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": name},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
	}}
	if mutate != nil {
		mutate(svc)
	}
	if _, err := s.kube(cluster).CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, ip := range ips {
		s.readyPod(t, cluster, ns, name, fmt.Sprintf("%s-%d", name, i), ip)
	}
}

// readyPod creates a Pod of app on the cluster's Node, made Running and
// Ready with ip through the status subresource, as a kubelet would.
func (s *svcEnv) readyPod(t *testing.T, cluster int, ns, app, name, ip string) {
	t.Helper()
	ctx := context.Background()
	pods := s.kube(cluster).CoreV1().Pods(ns)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: svcNode(cluster), Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (s *svcEnv) export(t *testing.T, cluster int, ns, name string) {
	t.Helper()
	se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := s.mcs(cluster).MulticlusterV1beta1().ServiceExports(ns).Create(context.Background(), se, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// imported is the ServiceImport ns/name of cluster with its derived
// Service (nil for headless) and its EndpointSlices, once check accepts them.
type imported struct {
	si      *mcsv1beta1.ServiceImport
	derived *corev1.Service
	slices  []discoveryv1.EndpointSlice
}

func (s *svcEnv) imported(cluster int, ns, name string) (*imported, error) {
	ctx := context.Background()
	si, err := s.mcs(cluster).MulticlusterV1beta1().ServiceImports(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := &imported{si: si}
	if d := si.Annotations[services.AnnotationDerivedService]; d != "" {
		if out.derived, err = s.kube(cluster).CoreV1().Services(ns).Get(ctx, d, metav1.GetOptions{}); err != nil {
			return nil, err
		}
	}
	list, err := s.kube(cluster).DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: mcsv1beta1.LabelServiceName + "=" + name})
	if err != nil {
		return nil, err
	}
	out.slices = list.Items
	return out, nil
}

// waitImported waits until cluster holds the import of ns/name.
func (s *svcEnv) waitImported(t *testing.T, cluster int, ns, name string) {
	t.Helper()
	framework.EventuallyT(t, svcConverge, fmt.Sprintf("import of %s/%s in cluster %d", ns, name, cluster), func() error {
		_, err := s.imported(cluster, ns, name)
		return err
	})
}

// endpoints are the addresses of the import's slices.
func (i *imported) endpoints() []string {
	var out []string
	for _, es := range i.slices {
		for _, e := range es.Endpoints {
			out = append(out, e.Addresses...)
		}
	}
	return out
}

// exportCondition checks one condition of ServiceExport ns/name of cluster.
func (s *svcEnv) exportCondition(cluster int, ns, name string, typ mcsv1beta1.ServiceExportConditionType, status metav1.ConditionStatus, reason string) error {
	se, err := s.mcs(cluster).MulticlusterV1beta1().ServiceExports(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	c := meta.FindStatusCondition(se.Status.Conditions, string(typ))
	switch {
	case c == nil:
		return fmt.Errorf("cluster %d %s/%s: no %s condition yet", cluster, ns, name, typ)
	case c.Status != status || (reason != "" && c.Reason != reason):
		return fmt.Errorf("cluster %d %s/%s: %s is %s/%s (%s), want %s/%s", cluster, ns, name, typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return nil
}

// gone is nil once ServiceImport ns/name is absent from cluster.
func (s *svcEnv) gone(cluster int, ns, name string) error {
	_, err := s.mcs(cluster).MulticlusterV1beta1().ServiceImports(ns).Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	return errors.New("still there")
}

// view reads the mesh's services view as the admin of the host cluster.
func (s *svcEnv) view() (*meshv1alpha1.ClusterMeshServices, error) { return s.viewIn(s.ns, "svc") }

// viewIn reads the services view of mesh ns/name as the admin of the host cluster.
func (s *svcEnv) viewIn(ns, name string) (*meshv1alpha1.ClusterMeshServices, error) {
	raw, err := s.kube(framework.HostCluster).CoreV1().RESTClient().Get().
		AbsPath("/apis", framework.MeshGroup, framework.MeshVersion, "namespaces", ns, "clustermeshes", name, "services").DoRaw(context.Background())
	if err != nil {
		return nil, fmt.Errorf("reading the services view: %w", err)
	}
	v := &meshv1alpha1.ClusterMeshServices{}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("decoding the services view: %w", err)
	}
	return v, nil
}

// viewImport is the view's import of ns/name in cluster, or nil.
func viewImport(v *meshv1alpha1.ClusterMeshServices, cluster, ns, name string) *meshv1alpha1.ImportState {
	for _, c := range v.Clusters {
		for i := range c.Imports {
			if c.Cluster == cluster && c.Imports[i].Namespace == ns && c.Imports[i].Name == name {
				return &c.Imports[i]
			}
		}
	}
	return nil
}

// mesh reads the ClusterMesh svc through the aggregation layer.
func (s *svcEnv) mesh() (*meshv1alpha1.ClusterMesh, error) { return s.meshIn(s.ns, "svc") }
