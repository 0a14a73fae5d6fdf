//go:build e2e

package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Cluster 1 (west) exports, cluster 2 (north) imports and runs the
// CoreDNS under test; both are dual-stack, so that a ClusterSetIP import has
// an IP of each family.
const (
	dnsExporter = 1
	dnsImporter = 2
	// dnsNS is the namespace servicesMembers makes on both.
	dnsNS = "shop"
	// dnsSettle bounds how long an export takes to be imported.
	dnsSettle = 60 * time.Second
)

var dnsServiceCIDRs = []string{"", "10.97.0.0/16,fd00:97::/112", "10.98.0.0/16,fd00:98::/112"}

// dnsMesh is TestServices' mesh of west and north, with services enabled.
var dnsMesh = strings.Replace(servicesMesh, "  name: shop\nspec:\n", "  name: dns\nspec:\n  multiClusterServices: Enabled\n", 1)

// startDNSEnv starts three clusters and the server, joins west and north
// as their member identities into a services mesh, creates the namespace
// shop on both and kubeadm's CoreDNS objects on north.
func startDNSEnv(t *testing.T) *framework.Env {
	t.Helper()
	if _, err := framework.CoreDNSBinary(); err != nil {
		t.Fatal(err)
	}
	env := framework.StartT(t, framework.Options{Clusters: 3, ServiceCIDRs: dnsServiceCIDRs})
	env.StartMeshServerT(t, framework.MeshServerOptions{})
	ctx := context.Background()
	ns, err := env.NewNamespace(ctx, "dns")
	if err != nil {
		t.Fatal(err)
	}
	servicesMembers(t, env, ns)
	if err := env.InstallKubeadmCoreDNS(ctx, dnsImporter, framework.KubeadmCoreDNSImage); err != nil {
		t.Fatal(err)
	}
	env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, dnsMesh, "apply", "-n", ns, "-f", "-")
	return env
}

// exportWeb exports shop/web from west: a dual-stack ClusterIP Service with
// the named ports http and grpc, one ready Pod.
func exportWeb(t *testing.T, env *framework.Env) {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: dnsNS}, Spec: corev1.ServiceSpec{
		Selector:       map[string]string{"app": "web"},
		IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyRequireDualStack),
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP},
			{Name: "grpc", Port: 9090, Protocol: corev1.ProtocolTCP}},
	}}
	if _, err := env.Client(dnsExporter, framework.UserAdmin).CoreV1().Services(dnsNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.CreateReadyPod(ctx, dnsExporter, dnsNS, framework.ReadyPod{Name: "web-1", Node: "west-1", IP: "10.52.1.5", Labels: map[string]string{"app": "web"}}); err != nil {
		t.Fatal(err)
	}
	export(t, env, "web")
}

func export(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	exp := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: dnsNS}}
	if _, err := mcs(env, dnsExporter).MulticlusterV1beta1().ServiceExports(dnsNS).Create(context.Background(), exp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// statefulDB exports shop/db from west: a headless Service and a real
// StatefulSet of three pods whose kubelet the test plays (it binds each pod
// to west's node and sets its IP and readiness); db-2 stays not ready.
func statefulDB(t *testing.T, env *framework.Env) map[string]string {
	t.Helper()
	ctx := context.Background()
	kube := env.Client(dnsExporter, framework.UserAdmin)
	labels := map[string]string{"app": "db"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: dnsNS}, Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: labels,
		Ports: []corev1.ServicePort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}},
	}}
	if _, err := kube.CoreV1().Services(dnsNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: dnsNS}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](3), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			AutomountServiceAccountToken: new(bool),
			Containers:                   []corev1.Container{{Name: "db", Image: "registry.invalid/db:1"}},
		}},
	}}
	if _, err := kube.AppsV1().StatefulSets(dnsNS).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ips := map[string]string{"db-0": "10.52.1.20", "db-1": "10.52.1.21", "db-2": "10.52.1.22"}
	for name, ip := range ips {
		framework.EventuallyT(t, dnsSettle, "pod "+name+" of the StatefulSet, bound and running", func() error {
			pod, err := kube.CoreV1().Pods(dnsNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pod.Spec.NodeName == "" {
				binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: "west-1"}}
				if err := kube.CoreV1().Pods(dnsNS).Bind(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsConflict(err) {
					return err
				}
				return fmt.Errorf("just bound")
			}
			ready := corev1.ConditionTrue
			if name == "db-2" {
				ready = corev1.ConditionFalse
			}
			now := metav1.Now()
			pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: now}, {Type: corev1.PodReady, Status: ready, LastTransitionTime: now}}}
			_, err = kube.CoreV1().Pods(dnsNS).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			return err
		})
	}
	export(t, env, "db")
	return ips
}

func mcs(env *framework.Env, cluster int) mcsclient.Interface {
	return mcsclient.NewForConfigOrDie(env.RESTConfig(cluster, framework.UserAdmin))
}

// corefileOf is the Corefile in north's ConfigMap, and the ConfigMap's
// resourceVersion and record annotation.
func corefileOf(t *testing.T, env *framework.Env) (corefile, rv, record string) {
	t.Helper()
	cm, err := env.Client(dnsImporter, framework.UserAdmin).CoreV1().ConfigMaps("kube-system").Get(context.Background(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["Corefile"], cm.ResourceVersion, cm.Annotations["mesh.kilo.squat.ai/dns-enabled"]
}

// setCorefile writes north's Corefile as an administrator would.
func setCorefile(t *testing.T, env *framework.Env, corefile string) {
	t.Helper()
	kube := env.Client(dnsImporter, framework.UserAdmin).CoreV1().ConfigMaps("kube-system")
	cm, err := kube.Get(context.Background(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["Corefile"] = corefile
	if _, err := kube.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// dnsCmd runs kubectl mesh dns ARGS against north as its administrator.
func dnsCmd(t *testing.T, env *framework.Env, args ...string) result {
	t.Helper()
	return mesh(t, env, framework.UserAdmin, append(append([]string{"dns"}, args...), "--member-kubeconfig", env.Kubeconfig(dnsImporter, framework.UserAdmin))...)
}

func wantOutput(t *testing.T, r result, code int, wants ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d: %s", r.code, code, r)
	}
	for _, w := range wants {
		if !strings.Contains(r.stdout+r.stderr, w) {
			t.Errorf("output lacks %q: %s", w, r)
		}
	}
}
