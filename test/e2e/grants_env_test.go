//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

const (
	// grantsGrace is the server's --host-access-grace-period here.
	grantsGrace = 40 * time.Second
	// promptly bounds how long a narrowed or deleted grant may take to
	// show on the host; the measured figure is logged.
	promptly = 20 * time.Second
	// peerAdmin may create, update and delete peers.kilo.squat.ai on the
	// host cluster, and edit in its namespace.
	peerAdmin = "peer-admin"
)

type grantsEnv struct {
	env    *framework.Env
	server *framework.MeshServer
	// hijacks are the Peers ever seen on the host cluster that route half
	// of the IPv4 space, by the namespace of the mesh that made them.
	mu      sync.Mutex
	hijacks map[string][]string
}

func startGrantsEnv(t *testing.T) *grantsEnv {
	t.Helper()
	env := framework.StartT(t, framework.Options{Clusters: 2, Users: []framework.User{{Name: peerAdmin, Groups: []string{"kilo-mesh:peer-admins"}}}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go env.KeepKiloNodesFresh(ctx, 15*time.Second)
	g := &grantsEnv{env: env, hijacks: map[string][]string{}}
	g.server = env.StartMeshServerT(t, framework.MeshServerOptions{
		// On the environment's etcd, where a test can store a mesh as a
		// server from before grants did.
		ExternalEtcd: true,
		ExtraArgs:    append(rcServerArgs(), "--host-access-grace-period="+grantsGrace.String()),
	})
	for _, n := range []struct {
		cluster int
		node    framework.KiloNode
	}{
		{0, framework.KiloNode{Name: "h-a", Location: "a", Endpoint: "203.0.113.1:51820", InternalIP: "192.168.0.1/24", PodCIDR: "10.10.1.0/24"}},
		{0, framework.KiloNode{Name: "h-g", Location: "g", Endpoint: "203.0.113.2:51820", InternalIP: "192.168.0.2/24", PodCIDR: "10.20.1.0/24"}},
		{1, framework.KiloNode{Name: "m-a", Location: "a", Endpoint: "198.51.100.1:51820", InternalIP: "192.168.1.1/24", PodCIDR: "10.11.1.0/24"}},
		{1, framework.KiloNode{Name: "m-b", Location: "b", Endpoint: "198.51.100.2:51820", InternalIP: "192.168.1.2/24", PodCIDR: "10.11.2.0/24"}},
		{1, framework.KiloNode{Name: "m-g", Location: "g", Endpoint: "198.51.100.3:51820", InternalIP: "192.168.1.3/24", PodCIDR: "10.21.1.0/24"}},
		{1, framework.KiloNode{Name: "m-v6", Location: "v6", Endpoint: "198.51.100.4:51820", InternalIP: "192.168.1.4/24", PodCIDR: "fd11::/64"}},
	} {
		if _, err := env.CreateKiloNode(ctx, n.cluster, n.node); err != nil {
			t.Fatalf("node %s: %v", n.node.Name, err)
		}
	}
	// Peer rights on the host, as an operator of Kilo itself would hold them.
	admin := env.Client(framework.HostCluster, framework.UserAdmin)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kilo-peer-admin"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{kilov1alpha1.GroupName}, Resources: []string{"peers"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kilo-peer-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kilo-peer-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: peerAdmin}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	go g.watchHijacks(ctx)
	return g
}

// watchHijacks records every Peer on the host cluster that routes half of
// the IPv4 space, whoever made it, for as long as the test runs.
func (g *grantsEnv) watchHijacks(ctx context.Context) {
	peers := g.env.Dynamic(framework.HostCluster, framework.UserAdmin).Resource(kilov1alpha1.PeerResource)
	for ctx.Err() == nil {
		w, err := peers.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for e := range w.ResultChan() {
			if e.Type != watch.Added && e.Type != watch.Modified {
				continue
			}
			p := &kilov1alpha1.Peer{}
			u, ok := e.Object.(*unstructured.Unstructured)
			if !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p) != nil {
				continue
			}
			if slices.Contains(p.Spec.AllowedIPs, "0.0.0.0/1") || slices.Contains(p.Spec.AllowedIPs, "128.0.0.0/1") {
				g.mu.Lock()
				g.hijacks[p.Labels[planner.LabelMeshNamespace]] = append(g.hijacks[p.Labels[planner.LabelMeshNamespace]], p.Name)
				g.mu.Unlock()
			}
		}
	}
}

func (g *grantsEnv) hijacksFrom(ns string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.hijacks[ns])
}

// tenantNamespace is a fresh namespace where user has edit (and no more),
// holding the kubeconfig of member cluster 1 in Secret cluster-1-kubeconfig.
func (g *grantsEnv) tenantNamespace(t *testing.T, prefix, user string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := g.env.NewNamespace(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.env.GrantNamespaceRole(ctx, framework.HostCluster, ns, user, "edit"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.env.CreateKubeconfigSecret(ctx, ns, "cluster-1-kubeconfig", 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	return ns
}

func (g *grantsEnv) create(user, ns, manifest string) (string, error) {
	_, stderr, err := g.env.KubectlWithInput(context.Background(), strings.NewReader(manifest), framework.HostCluster, user, "-n", ns, "create", "-f", "-")
	return stderr, err
}

func (g *grantsEnv) in(ns string) *rcEnv { return &rcEnv{env: g.env, server: g.server, ns: ns} }

// plan reads the plan view of a mesh.
func (g *grantsEnv) plan(t *testing.T, ns, name string) *meshv1alpha1.ClusterMeshPlan {
	t.Helper()
	raw := g.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "get", "--raw", "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"+ns+"/clustermeshes/"+name+"/plan")
	p := &meshv1alpha1.ClusterMeshPlan{}
	if err := json.Unmarshal([]byte(raw), p); err != nil {
		t.Fatalf("decoding plan: %v", err)
	}
	return p
}

// meshPeers are the Peers a mesh manages on cluster i, by name.
func (g *grantsEnv) meshPeers(t *testing.T, ns string, i int, uid string) map[string]*kilov1alpha1.Peer {
	t.Helper()
	peers, err := g.in(ns).peers(t, i, types.UID(uid))
	if err != nil {
		t.Fatal(err)
	}
	return peers
}

// hijackMesh declares a local cluster with IPv6 networks only, so that
// nothing of the host's declared networks overlaps the two halves of the
// IPv4 space its remote cluster claims: containment alone stops nothing.
const hijackMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: NAME
spec:
  clusters:
  - name: cluster-0
    local: true
    podCIDRs: ["fd10::/64"]
    wireguardCIDR: fd40::/64
  - name: cluster-1
    kubeconfigSecretRef: {name: cluster-1-kubeconfig}
    podCIDRs: ["fd11::/64"]
    wireguardCIDR: fd41::/64
    additionalCIDRs: ["0.0.0.0/1", "128.0.0.0/1"]
`

// tenantMesh is an ordinary mesh of the host (location a) and cluster 1
// (locations a and b).
const tenantMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: NAME
  annotations:
    mesh.kilo.squat.ai/host-access: peer-rights
spec:
  clusters:
  - name: cluster-0
    local: true
    podCIDRs: ["10.10.0.0/16"]
    wireguardCIDR: 10.40.0.0/16
  - name: cluster-1
    kubeconfigSecretRef: {name: cluster-1-kubeconfig}
    podCIDRs: ["10.11.0.0/16"]
    wireguardCIDR: 10.41.0.0/16
`

func named(manifest, name string) string {
	return strings.Replace(manifest, "name: NAME", "name: "+name, 1)
}

func tenantGrant(ns string) meshv1alpha1.ClusterMeshGrantSpec {
	return meshv1alpha1.ClusterMeshGrantSpec{
		Namespaces:     []string{ns},
		MemberNetworks: []string{"10.11.0.0/16", "10.41.0.0/16", "fd11::/64", "fd41::/64"},
		LocalNetworks:  []string{"10.10.0.0/16", "10.40.0.0/16", "fd10::/64", "fd40::/64"},
		MemberServers:  framework.LoopbackServers,
	}
}
