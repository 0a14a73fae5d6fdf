//go:build e2e

package plugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The networks of the three clusters; the service CIDRs are the
// kube-apiservers' --service-cluster-ip-range, which join reads back from
// the ServiceCIDR objects.
var joinServiceCIDRs = []string{"10.43.0.0/16", "10.53.0.0/16", "10.63.0.0/16"}

const joinMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: demo
spec:
  clusters:
  - name: east
    local: true
    podCIDRs: ["10.42.0.0/16"]
    serviceCIDR: 10.43.0.0/16
    wireguardCIDR: 10.4.0.0/16
  - name: west
    kubeconfigSecretRef: {name: west-kubeconfig}
    podCIDRs: ["10.52.0.0/16"]
    serviceCIDR: 10.53.0.0/16
    wireguardCIDR: 10.5.0.0/16
`

// TestJoin joins a third cluster into a Ready mesh of two with the plugin,
// and checks what the issue asks of join and of the views around it.
func TestJoin(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 3, ServiceCIDRs: joinServiceCIDRs})
	server := env.StartMeshServerT(t, framework.MeshServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	t.Cleanup(func() {
		// The member identity must be enough for everything the server
		// does on the joined cluster.
		if strings.Contains(server.Logs(), "forbidden") {
			t.Errorf("the server met Forbidden errors:\n%s", server.LogTail(40))
		}
	})
	nodes := []struct {
		cluster int
		node    framework.KiloNode
	}{
		{0, framework.KiloNode{Name: "e1", InternalIP: "192.168.0.1/24", Location: "home", Leader: true, Endpoint: "198.51.100.1:51820", WireGuardIP: "10.4.0.1/16", PodCIDR: "10.42.1.0/24"}},
		{1, framework.KiloNode{Name: "w1", InternalIP: "192.168.1.1/24", Location: "eu", Leader: true, Endpoint: "203.0.113.10:51820", WireGuardIP: "10.5.0.1/16", PodCIDR: "10.52.1.0/24"}},
		{1, framework.KiloNode{Name: "dup", InternalIP: "192.168.1.2/24", Location: "eu", Endpoint: "203.0.113.11:51820", PodCIDR: "10.52.2.0/24"}},
		{2, framework.KiloNode{Name: "n1", InternalIP: "192.168.2.1/24", Location: "north-a", Leader: true, Endpoint: "192.0.2.1:51820", WireGuardIP: "10.6.0.1/16", PodCIDR: "10.62.1.0/24"}},
		{2, framework.KiloNode{Name: "n2", InternalIP: "192.168.2.2/24", Location: "north-b", Leader: true, Endpoint: "192.0.2.2:51820", WireGuardIP: "10.6.0.2/16", PodCIDR: "10.62.2.0/24"}},
		{2, framework.KiloNode{Name: "dup", InternalIP: "192.168.2.3/24", Location: "north-a", Endpoint: "192.0.2.3:51820", PodCIDR: "10.62.3.0/24"}},
		// kg has not written a key: Kilo does not count the node.
		{2, framework.KiloNode{Name: "n4-nokey", InternalIP: "192.168.2.4/24", Location: "north-b", NoKey: true, Endpoint: "192.0.2.4:51820", PodCIDR: "10.62.4.0/24"}},
	}
	for _, n := range nodes {
		if _, err := env.CreateKiloNode(ctx, n.cluster, n.node); err != nil {
			t.Fatalf("node %s: %v", n.node.Name, err)
		}
	}
	go env.KeepKiloNodesFresh(ctx, 15*time.Second)

	ns, err := env.NewNamespace(ctx, "join")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.CreateKubeconfigSecret(ctx, ns, "west-kubeconfig", 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, joinMesh, "apply", "-n", ns, "-f", "-")
	t.Run("status --wait returns when Ready", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "status", "demo", "-n", ns, "--wait", "--timeout", "90s")
		// The column's width follows the longest condition type.
		if !regexp.MustCompile(`(?m)^Ready +True `).MatchString(r.stdout) {
			t.Errorf("status after --wait does not show Ready True:\n%s", r)
		}
	})

	joinArgs := []string{"join", "demo", "-n", ns, "--name", "north", "--member-kubeconfig", env.Kubeconfig(2, framework.UserAdmin)}
	hostKube := env.Client(framework.HostCluster, framework.UserAdmin)
	north := env.Client(2, framework.UserAdmin)
	meshes := env.Dynamic(framework.HostCluster, framework.UserAdmin).Resource(framework.ClusterMeshGVR).Namespace(ns)
	// The server writes the status on its own; what join writes shows in
	// the spec's generation.
	meshGeneration := func() string {
		m, err := meshes.Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(m.GetGeneration())
	}

	t.Run("dry run prints every object and writes nothing", func(t *testing.T) {
		before := meshGeneration()
		r := mustMesh(t, env, framework.UserAdmin, append(joinArgs, "--dry-run")...)
		for _, want := range []string{"kind: Namespace", "kind: ServiceAccount", "kind: ClusterRole", "kind: ClusterRoleBinding",
			"kind: Secret", "kind: ClusterMesh", "token: REDACTED", "name: north", "podCIDRs:\n    - 10.62.0.0/21", "serviceCIDR: 10.63.0.0/16", "wireguardCIDR: 10.6.0.0/16",
			"nodeCIDRs:\n    - 192.168.2.0/29"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("dry run output lacks %q:\n%s", want, r)
			}
		}
		if strings.Contains(r.stdout+r.stderr, env.Token(framework.UserAdmin)) {
			t.Errorf("dry run printed the caller's token")
		}
		if got := meshGeneration(); got != before {
			t.Errorf("dry run changed the mesh: generation %s -> %s", before, got)
		}
		if _, err := hostKube.CoreV1().Secrets(ns).Get(ctx, "north-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry run wrote the Secret (get: %v)", err)
		}
		if _, err := north.CoreV1().Namespaces().Get(ctx, member.Namespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry run created namespace %s on the member (get: %v)", member.Namespace, err)
		}
		if _, err := north.RbacV1().ClusterRoles().Get(ctx, member.ClusterRole, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry run created ClusterRole %s on the member (get: %v)", member.ClusterRole, err)
		}
	})

	t.Run("join adds the cluster with the member identity's token", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, append(joinArgs, "--pod-cidrs", "10.62.0.0/16")...)
		// nodeCIDRs covers the Nodes' InternalIPs, as podCIDRs their pod CIDRs.
		for _, want := range []string{"podCIDRs       10.62.0.0/16", "serviceCIDR    10.63.0.0/16", "nodeCIDRs      192.168.2.0/29  --node-cidrs      covering prefix of the InternalIPs of 4 node(s)",
			"ClusterRole/kilo-mesh-member: created", "entry north added",
			"Services rights: not granted (clustermesh " + ns + "/demo has no multi-cluster services; --services grants them)"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("join output lacks %q:\n%s", want, r)
			}
		}
		// A mesh without services: the base rights, exactly.
		if _, err := north.RbacV1().ClusterRoles().Get(ctx, member.ServicesClusterRole, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("join of a mesh without services created ClusterRole %s (get: %v)", member.ServicesClusterRole, err)
		}
		checkMemberRights(t, env, 2, false)
		secret, err := hostKube.CoreV1().Secrets(ns).Get(ctx, "north-kubeconfig", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := memberaccess.ParseKubeconfig(secret.Data["kubeconfig"], false)
		if err != nil {
			t.Fatalf("the Secret's kubeconfig is refused by the server's rules: %v", err)
		}
		if cfg.BearerToken == env.Token(framework.UserAdmin) || strings.Contains(string(secret.Data["kubeconfig"]), env.Token(framework.UserAdmin)) {
			t.Fatalf("the Secret holds the caller's own token")
		}
		if sub := jwtSubject(t, cfg.BearerToken); sub != member.Username() {
			t.Errorf("the Secret's token is for %q, want the member identity %q", sub, member.Username())
		}
		if cfg.Host != env.Cluster(2).URL {
			t.Errorf("the Secret's kubeconfig names %s, want %s", cfg.Host, env.Cluster(2).URL)
		}
	})

	t.Run("the joined cluster's Peers appear and the mesh becomes Ready", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "status", "demo", "-n", ns, "--wait", "--timeout", "90s")
		if !strings.Contains(r.stdout, "north") {
			t.Errorf("status does not show north:\n%s", r)
		}
		for _, target := range []int{0, 1} {
			list, err := env.Dynamic(target, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).List(ctx,
				metav1.ListOptions{LabelSelector: planner.LabelSourceCluster + "=north"})
			if err != nil {
				t.Fatal(err)
			}
			// n1 and n2 lead their locations; dup routes through n1.
			if len(list.Items) != 2 {
				t.Errorf("cluster %d holds %d Peers of north, want 2 (one per location)", target, len(list.Items))
			}
		}
		list, err := env.Dynamic(2, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 {
			t.Errorf("north holds %d Peers, want 2 (east's and west's location)", len(list.Items))
		}
	})

	t.Run("a rerun changes nothing", func(t *testing.T) {
		rvs := func() map[string]string {
			out := map[string]string{"mesh": meshGeneration()}
			s, err := hostKube.CoreV1().Secrets(ns).Get(ctx, "north-kubeconfig", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out["secret"] = s.ResourceVersion
			for kind, gvr := range map[string]schema.GroupVersionResource{
				"Namespace":          {Version: "v1", Resource: "namespaces"},
				"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
				"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
				"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
			} {
				ns := ""
				if kind == "ServiceAccount" {
					ns = member.Namespace
				}
				u, err := env.Dynamic(2, framework.UserAdmin).Resource(gvr).Namespace(ns).Get(ctx, "kilo-mesh-member", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				out[kind] = u.GetResourceVersion()
			}
			return out
		}
		before := rvs()
		r := mustMesh(t, env, framework.UserAdmin, joinArgs...)
		after := rvs()
		for k, v := range before {
			if after[k] != v {
				t.Errorf("rerun changed %s: %s -> %s (generation of the mesh, else resourceVersion)\n%s", k, v, after[k], r)
			}
		}
		if !strings.Contains(r.stdout, "Credential: kept") {
			t.Errorf("rerun did not keep the credential:\n%s", r)
		}
	})

	t.Run("--services grants the services rights, which stay", func(t *testing.T) { testJoinServices(t, env, joinArgs) })

	t.Run("--refresh renews the token", func(t *testing.T) {
		old, err := hostKube.CoreV1().Secrets(ns).Get(ctx, "north-kubeconfig", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Tokens carry their issue time in seconds: make the new one differ.
		time.Sleep(1100 * time.Millisecond)
		mustMesh(t, env, framework.UserAdmin, append(joinArgs, "--refresh")...)
		renewed, err := hostKube.CoreV1().Secrets(ns).Get(ctx, "north-kubeconfig", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(renewed.Data["kubeconfig"]) == string(old.Data["kubeconfig"]) {
			t.Errorf("--refresh left the kubeconfig as it was")
		}
		mustMesh(t, env, framework.UserAdmin, "status", "demo", "-n", ns, "--wait", "--timeout", "60s")
	})

	t.Run("a token of another identity in the Secret is replaced", func(t *testing.T) {
		// Valid, far from expiry, for the right server: only the member
		// cluster can tell that it is not the member identity's.
		if _, err := north.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		token, err := env.ServiceAccountToken(ctx, 2, "default", "intruder", 90*24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		kc, err := env.KubeconfigFor(2, "intruder", token)
		if err != nil {
			t.Fatal(err)
		}
		secret, err := hostKube.CoreV1().Secrets(ns).Get(ctx, "north-kubeconfig", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secret.Data["kubeconfig"] = kc
		if _, err := hostKube.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		r := mustMesh(t, env, framework.UserAdmin, joinArgs...)
		if !strings.Contains(r.stdout, "Credential: new token") || !strings.Contains(r.stdout, `authenticates as "system:serviceaccount:default:intruder"`) {
			t.Errorf("join kept or misreported another identity's token:\n%s", r)
		}
		secret, err = hostKube.CoreV1().Secrets(ns).Get(ctx, "north-kubeconfig", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cfg, err := memberaccess.ParseKubeconfig(secret.Data["kubeconfig"], false); err != nil || jwtSubject(t, cfg.BearerToken) != member.Username() {
			t.Errorf("the Secret does not hold the member identity's token again (%v)", err)
		}
	})

	t.Run("why explains a skipped node and ambiguous names", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "why", "demo", "n4-nokey", "-n", ns)
		if !strings.Contains(r.stdout, "Node n4-nokey of cluster north: skipped (NoPublicKey)") {
			t.Errorf("why does not explain the node without key:\n%s", r)
		}
		r = mesh(t, env, framework.UserAdmin, "why", "demo", "dup", "-n", ns)
		if r.code != 1 || !strings.Contains(r.stderr, "ambiguous") || !strings.Contains(r.stderr, "north, west") {
			t.Errorf("why of a name two clusters have: want exit 1 naming both clusters, got %s", r)
		}
		r = mustMesh(t, env, framework.UserAdmin, "why", "demo", "dup", "--cluster", "north", "-n", ns)
		if !strings.Contains(r.stdout, "Node dup of cluster north: advertised") || !strings.Contains(r.stdout, "leader n1") {
			t.Errorf("why --cluster north:\n%s", r)
		}
	})

	t.Run("plan, peers and graph", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "plan", "demo", "-n", ns)
		for _, want := range []string{"north: granularity Location", "skipped n4-nokey: NoPublicKey", "No changes"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("plan lacks %q:\n%s", want, r)
			}
		}
		r = mustMesh(t, env, framework.UserAdmin, "peers", "demo", "-n", ns, "--cluster", "north", "--format", "wireguard")
		if strings.Count(r.stdout, "[Peer]") != 2 {
			t.Errorf("wireguard peers of north: want 2 [Peer] sections:\n%s", r)
		}
		r = mustMesh(t, env, framework.UserAdmin, "peers", "demo", "-n", ns, "--cluster", "north", "--format", "json")
		if !strings.Contains(r.stdout, `"kind": "Peer"`) {
			t.Errorf("json peers of north:\n%s", r)
		}
		applied := env.KubectlInT(t, 2, framework.UserAdmin, r.stdout, "apply", "--server-side", "--dry-run=server", "-f", "-")
		if strings.Count(applied, "peer.kilo.squat.ai/") != 2 {
			t.Errorf("the JSON list of north's 2 Peers does not apply there:\n%s", applied)
		}
		if _, err := exec.LookPath("dot"); err != nil {
			t.Fatalf("Graphviz's dot is needed for graph -o svg: install graphviz (apt-get install --no-install-recommends graphviz)")
		}
		r = mustMesh(t, env, framework.UserAdmin, "graph", "demo", "-n", ns, "-o", "svg")
		if !strings.Contains(r.stdout, "<svg") {
			t.Errorf("graph -o svg printed no SVG:\n%.400s", r.stdout)
		}
		// Without dot on PATH: a clear error, before any request.
		cmd := exec.Command(pluginPath, "graph", "demo", "-n", ns, "-o", "svg", "--kubeconfig", env.Kubeconfig(framework.HostCluster, framework.UserAdmin))
		cmd.Env = []string{"PATH=/nonexistent", "HOME=" + os.TempDir()}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "install Graphviz") {
			t.Errorf("graph -o svg without dot: want a clear error, got %v: %s", err, out)
		}
	})

	t.Run("shell completion through kubectl", func(t *testing.T) {
		out := env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "__complete", "mesh", "status", "-n", ns, "")
		if !strings.Contains(out, "demo\n") {
			t.Errorf("completing a mesh name:\n%s", out)
		}
		out = env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "__complete", "mesh", "why", "demo", "-n", ns, "--cluster", "")
		for _, c := range []string{"east", "north", "west"} {
			if !strings.Contains(out, c+"\n") {
				t.Errorf("completing --cluster lacks %s:\n%s", c, out)
			}
		}
	})

	t.Run("one output contract", func(t *testing.T) { testOutputContract(t, env, ns) })

	t.Run("a tenant without Peer rights on the host is told which grant is missing", func(t *testing.T) { testJoinUnderGrants(ctx, t, env) })

	t.Run("status exits 2 when the mesh is not Ready", func(t *testing.T) {
		if err := env.StopCluster(2); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := env.StartCluster(context.Background(), 2); err != nil {
				t.Fatal(err)
			}
		}()
		var r result
		// Until the server notices, the mesh may still read Ready.
		framework.EventuallyT(t, 60*time.Second, "status reports north unreachable", func() error {
			r = mesh(t, env, framework.UserAdmin, "status", "demo", "-n", ns)
			if r.code != 2 {
				return fmt.Errorf("%s", r)
			}
			return nil
		})
		if !strings.Contains(r.stderr, "is not Ready") {
			t.Errorf("status of a mesh that is not Ready:\n%s", r)
		}
	})
}
