//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Host access as attacks against the real server: tenants hold only edit
// in their namespace, the shipped defaults otherwise, and try to steer the
// host cluster's traffic. Grants are created, narrowed and deleted by an
// admin while meshes run. The subtests of TestGrants build on each other.

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

func TestGrants(t *testing.T) {
	g := startGrantsEnv(t)
	ctx := context.Background()
	tenant := framework.UserTenantA
	ns := g.tenantNamespace(t, "grants", tenant)

	t.Run("without a grant the hijack is refused with 403", func(t *testing.T) {
		stderr, err := g.create(tenant, ns, named(hijackMesh, "hijack"))
		if err == nil {
			t.Fatal("a tenant with edit created a mesh reaching into the host without a grant")
		}
		for _, want := range []string{"forbidden", "spec.clusters[0].local", "create, update, delete peers.kilo.squat.ai",
			"you may not create, update, delete", `ClusterMeshGrant covering namespace "` + ns + `" (none does)`} {
			if !strings.Contains(stderr, want) {
				t.Errorf("the refusal lacks %q: %s", want, stderr)
			}
		}
	})

	if err := g.env.ApplyGrant(ctx, "tenant", tenantGrant(ns)); err != nil {
		t.Fatal(err)
	}

	t.Run("with a grant that does not cover the networks the hijack is refused with 422", func(t *testing.T) {
		var stderr string
		// The grant reaches the server's caches through a watch.
		framework.EventuallyT(t, promptly, "a 422 instead of a 403", func() error {
			var err error
			if stderr, err = g.create(tenant, ns, named(hijackMesh, "hijack")); err == nil {
				return fmt.Errorf("the hijack was accepted")
			}
			if strings.Contains(stderr, "forbidden") {
				return fmt.Errorf("still refused for want of a grant: %s", stderr)
			}
			return nil
		})
		for _, want := range []string{"is invalid",
			`spec.clusters[1].additionalCIDRs[0]: Invalid value: "0.0.0.0/1": outside the memberNetworks of the ClusterMeshGrants covering namespace "` + ns + `"`,
			`spec.clusters[1].additionalCIDRs[1]: Invalid value: "128.0.0.0/1"`} {
			if !strings.Contains(stderr, want) {
				t.Errorf("the refusal lacks %q: %s", want, stderr)
			}
		}
		if strings.Contains(stderr, "podCIDRs") || strings.Contains(stderr, "wireguardCIDR") {
			t.Errorf("networks inside the grant were refused: %s", stderr)
		}
		if out := g.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", ns, "get", "cmesh", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("a refused mesh was stored: %s", out)
		}
	})

	t.Run("a user with Peer rights can, and gains nothing", func(t *testing.T) {
		own := g.tenantNamespace(t, "peer-admin", peerAdmin)
		var stderr string
		// The delegated authorizer caches answers for 10 s.
		framework.EventuallyT(t, promptly, "the mesh of a user with Peer rights accepted", func() error {
			var err error
			if stderr, err = g.create(peerAdmin, own, named(hijackMesh, "routes")); err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		})
		rc := g.in(own)
		framework.EventuallyT(t, rcConverge, "the Peer on the host, and Granted", func() error {
			m := rc.mesh(t, "routes")
			if got := m.Annotations[meshv1alpha1.AnnotationHostAccess]; got != meshv1alpha1.HostAccessPeerRights {
				return fmt.Errorf("recorded %q", got)
			}
			if err := wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionTrue, planner.HostReasonPeerRights); err != nil {
				return err
			}
			if len(g.hijacksFrom(own)) == 0 {
				return fmt.Errorf("no Peer routing half the IPv4 space on the host yet")
			}
			return nil
		})
		if err := rc.meshes().Delete(ctx, "routes", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "the mesh and its Peers gone", func() error {
			if rc.mesh(t, "routes") != nil {
				return fmt.Errorf("the mesh is still there")
			}
			return nil
		})
		// The same watch saw the tenant's attempts: none of them ever
		// became a Peer.
		if seen := g.hijacksFrom(ns); len(seen) > 0 {
			t.Errorf("the tenant's refused meshes put Peers on the host: %v", seen)
		}
	})

	var mesh *meshv1alpha1.ClusterMesh
	rc := g.in(ns)
	t.Run("the host-access record cannot be forged", func(t *testing.T) {
		// The manifest claims peer-rights; admission decides and overwrites.
		// (Admission may still see the mesh just deleted, which claimed
		// half of everything.)
		framework.EventuallyT(t, promptly, "a mesh inside the grant accepted", func() error {
			if stderr, err := g.create(tenant, ns, named(tenantMesh, "mine")); err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		})
		record := func() string { return rc.mesh(t, "mine").Annotations[meshv1alpha1.AnnotationHostAccess] }
		if got := record(); got != meshv1alpha1.HostAccessGrant {
			t.Fatalf("recorded %q, want %q", got, meshv1alpha1.HostAccessGrant)
		}
		for _, attempt := range [][]string{
			{"annotate", "--overwrite", "cmesh", "mine", meshv1alpha1.AnnotationHostAccess + "=" + meshv1alpha1.HostAccessPeerRights},
			{"annotate", "cmesh", "mine", meshv1alpha1.AnnotationHostAccess + "-"},
			{"patch", "cmesh", "mine", "--type=json", "-p", `[{"op":"remove","path":"/metadata/annotations"}]`},
		} {
			g.env.KubectlT(t, framework.HostCluster, tenant, append([]string{"-n", ns}, attempt...)...)
			if got := record(); got != meshv1alpha1.HostAccessGrant {
				t.Errorf("after kubectl %v: recorded %q", attempt, got)
			}
		}
		// Claiming peer-rights does not lift the grant's bounds either.
		outside := strings.Replace(named(tenantMesh, "forged"), `podCIDRs: ["10.11.0.0/16"]`, `podCIDRs: ["10.11.0.0/16"]`+"\n    additionalCIDRs: [\"192.0.2.0/24\"]", 1)
		if stderr, err := g.create(tenant, ns, outside); err == nil || !strings.Contains(stderr, `spec.clusters[1].additionalCIDRs[0]: Invalid value: "192.0.2.0/24": outside the memberNetworks`) {
			t.Errorf("a forged record lifted the grant's bounds: %v: %s", err, stderr)
		}
		framework.EventuallyT(t, rcConverge, "the mesh applied and Granted", func() error {
			mesh = rc.mesh(t, "mine")
			if err := wantCondition(mesh, meshv1alpha1.ConditionGranted, metav1.ConditionTrue, planner.HostReasonGranted); err != nil {
				return err
			}
			if len(g.meshPeers(t, ns, 0, string(mesh.UID))) != 2 {
				return fmt.Errorf("the host does not hold the Peers of locations a and b")
			}
			return rc.allMatchView(t, mesh, 0, 1)
		})
	})
	if mesh == nil {
		t.Fatal("no mesh to narrow the grant of")
	}

	t.Run("grant narrowed", func(t *testing.T) {
		before := g.meshPeers(t, ns, 0, string(mesh.UID))
		keep := before[planner.PeerName(ns, "mine", "cluster-1", "location:a")]
		gone := planner.PeerName(ns, "mine", "cluster-1", "location:b")
		if keep == nil || before[gone] == nil {
			t.Fatalf("the host holds %v", before)
		}
		narrowed := tenantGrant(ns)
		narrowed.MemberNetworks = keep.Spec.AllowedIPs
		start := time.Now()
		if err := g.env.ApplyGrant(ctx, "tenant", narrowed); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, promptly, "the uncovered Peer gone from the host", func() error {
			have := g.meshPeers(t, ns, 0, string(mesh.UID))
			if have[gone] != nil {
				return fmt.Errorf("%s still on the host", gone)
			}
			if p := have[keep.Name]; p == nil || p.ResourceVersion != keep.ResourceVersion {
				return fmt.Errorf("the covered Peer %s was changed or removed", keep.Name)
			}
			return nil
		})
		t.Logf("a narrowed grant took %s from the write of the grant to remove the uncovered Peer from the host", time.Since(start).Round(time.Millisecond))
		framework.EventuallyT(t, rcConverge, "Granted=False saying why, the plan showing it", func() error {
			m := rc.mesh(t, "mine")
			if err := wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonNetworksNotGranted); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionGranted); !strings.Contains(c.Message, "spec.clusters[1].podCIDRs[0] 10.11.0.0/16") {
				return fmt.Errorf("the condition does not name the uncovered network: %s", c.Message)
			}
			p := g.plan(t, ns, "mine")
			if p.HostAccess == nil || p.HostAccess.Granted || p.HostAccess.Reason != planner.HostReasonNetworksNotGranted ||
				!slices.Equal(p.HostAccess.MemberNetworks, narrowed.MemberNetworks) {
				return fmt.Errorf("plan's hostAccess %+v", p.HostAccess)
			}
			if !slices.ContainsFunc(p.Conflicts, func(i meshv1alpha1.PlanIssue) bool {
				return i.Reason == planner.ConflictOutsideHostAccess && i.Cluster == "cluster-1" && i.Target == "cluster-0"
			}) {
				return fmt.Errorf("no %s conflict in the plan: %+v", planner.ConflictOutsideHostAccess, p.Conflicts)
			}
			if len(rc.events(t, "mine", planner.HostReasonNetworksNotGranted)) == 0 {
				return fmt.Errorf("no %s event", planner.HostReasonNetworksNotGranted)
			}
			return rc.allMatchView(t, m, 0, 1)
		})
	})

	t.Run("grant deleted", func(t *testing.T) {
		start := time.Now()
		if err := g.env.DeleteGrant(ctx, "tenant"); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, promptly, "the mesh's Peers gone from the host and the host's from cluster 1", func() error {
			if have := g.meshPeers(t, ns, 0, string(mesh.UID)); len(have) > 0 {
				return fmt.Errorf("the host still holds %d Peers", len(have))
			}
			for name, p := range g.meshPeers(t, ns, 1, string(mesh.UID)) {
				if p.Labels[planner.LabelSourceCluster] == "cluster-0" {
					return fmt.Errorf("cluster 1 still holds %s, representing the host", name)
				}
			}
			return nil
		})
		t.Logf("a deleted grant took %s from its deletion to empty the host", time.Since(start).Round(time.Millisecond))
		framework.EventuallyT(t, rcConverge, "Granted=False NoGrant, the plan showing it", func() error {
			m := rc.mesh(t, "mine")
			if err := wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonNoGrant); err != nil {
				return err
			}
			p := g.plan(t, ns, "mine")
			for _, tp := range p.Targets {
				if tp.Cluster == "cluster-0" && tp.DesiredPeers != 0 {
					return fmt.Errorf("the plan still wants %d Peers on the host", tp.DesiredPeers)
				}
			}
			if p.HostAccess == nil || p.HostAccess.Basis != meshv1alpha1.HostAccessBasisNone {
				return fmt.Errorf("plan's hostAccess %+v", p.HostAccess)
			}
			return nil
		})
		// Rewriting the spec does not win the access back.
		_, stderr, err := g.env.Kubectl(ctx, framework.HostCluster, tenant, "-n", ns, "patch", "cmesh", "mine", "--type=merge",
			"-p", `{"spec":{"clusters":[{"name":"cluster-0","local":true,"podCIDRs":["10.10.0.0/16"],"wireguardCIDR":"10.40.0.0/16","persistentKeepalive":25},`+
				`{"name":"cluster-1","kubeconfigSecretRef":{"name":"cluster-1-kubeconfig"},"podCIDRs":["10.11.0.0/16"],"wireguardCIDR":"10.41.0.0/16"}]}}`)
		if err == nil || !strings.Contains(stderr, "forbidden") {
			t.Errorf("a spec update without a grant: %v: %s", err, stderr)
		}
	})

	t.Run("upgrade grace period", func(t *testing.T) {
		g.upgradeGracePeriod(t)
	})
}

// upgradeGracePeriod: a mesh stored before grants existed (written straight
// into etcd, as an older server stored it: no host-access record, no
// status), covered by no grant, keeps its Peers on the host for the grace
// period with Granted=False and an event, across a restart, then loses them.
// Going around the API is the only way to get such a mesh: every write
// through it, the admin's too, gets a record or keeps the stored one.
func (g *grantsEnv) upgradeGracePeriod(t *testing.T) {
	ctx := context.Background()
	ns := g.tenantNamespace(t, "pre-grant", framework.UserTenantA)
	rc := g.in(ns)
	keys, err := g.env.EtcdKeys(ctx, g.server.EtcdPrefix+"/")
	if err != nil {
		t.Fatal(err)
	}
	// The layout of the server's keys, as a mesh stored through the API shows it.
	prefix := g.server.EtcdPrefix + "/mesh.kilo.squat.ai/clustermeshes/"
	if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, prefix) }) {
		t.Fatalf("no mesh under %s in %v", prefix, keys)
	}
	old := map[string]any{
		"apiVersion": meshv1alpha1.SchemeGroupVersion.String(),
		"kind":       "ClusterMesh",
		"metadata": map[string]any{"name": "old", "namespace": ns, "uid": string(uuid.NewUUID()), "generation": 1,
			"creationTimestamp": time.Now().Add(-30 * 24 * time.Hour).UTC().Format(time.RFC3339)},
		"spec": map[string]any{"clusters": []any{
			map[string]any{"name": "cluster-0", "local": true, "podCIDRs": []any{"10.20.0.0/16"}, "wireguardCIDR": "10.50.0.0/16"},
			map[string]any{"name": "cluster-1", "kubeconfigSecretRef": map[string]any{"name": "cluster-1-kubeconfig"},
				"podCIDRs": []any{"10.21.0.0/16"}, "wireguardCIDR": "10.51.0.0/16"},
		}},
	}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.env.EtcdPut(ctx, prefix+ns+"/old", b); err != nil {
		t.Fatal(err)
	}
	var ends metav1.Time
	framework.EventuallyT(t, rcConverge, "Granted=False for the grace period, an event, the Peers on the host", func() error {
		m := rc.mesh(t, "old")
		if m == nil {
			return fmt.Errorf("the mesh stored in etcd is not served")
		}
		if err := wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonUpgradeGracePeriod); err != nil {
			return err
		}
		p := g.plan(t, ns, "old")
		if p.HostAccess == nil || p.HostAccess.GracePeriodEnds == nil {
			return fmt.Errorf("plan's hostAccess %+v", p.HostAccess)
		}
		ends = *p.HostAccess.GracePeriodEnds
		if len(rc.events(t, "old", planner.HostReasonUpgradeGracePeriod)) == 0 {
			return fmt.Errorf("no %s event", planner.HostReasonUpgradeGracePeriod)
		}
		if len(g.meshPeers(t, ns, 0, string(m.UID))) == 0 {
			return fmt.Errorf("no Peer on the host during the grace period")
		}
		return nil
	})
	if d := time.Until(ends.Time); d <= 0 || d > grantsGrace {
		t.Fatalf("the grace period ends at %s, %s from now; want within %s", ends, d, grantsGrace)
	}

	// The end is kept in the mesh's status, not in memory.
	if err := g.server.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := g.server.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if p := g.plan(t, ns, "old"); p.HostAccess == nil || p.HostAccess.GracePeriodEnds == nil || !p.HostAccess.GracePeriodEnds.Equal(&ends) {
		t.Errorf("after a restart the grace period ends at %+v, before at %s", p.HostAccess, ends)
	}

	var m *meshv1alpha1.ClusterMesh
	framework.EventuallyT(t, time.Until(ends.Time)+promptly, "the Peers gone from the host after the grace period", func() error {
		m = rc.mesh(t, "old")
		if n := len(g.meshPeers(t, ns, 0, string(m.UID))); n > 0 {
			return fmt.Errorf("%d Peers still on the host", n)
		}
		return wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonGracePeriodExpired)
	})
	if time.Now().Before(ends.Time) {
		t.Errorf("the Peers went before the grace period ended at %s", ends)
	}
	t.Logf("the grace period ended at %s; the host was emptied by %s", ends.Format(time.RFC3339), time.Now().Format(time.RFC3339))
}

// TestGrantAPI: grants behave as kubectl users expect of any resource, and
// only cluster administrators see them: a grant names other tenants'
// namespaces.
func TestGrantAPI(t *testing.T) {
	ctx := context.Background()
	name := framework.UniqueName("api")
	spec := framework.TenantGrant("team-x")
	spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kilo-mesh": "allowed"}}
	if err := env.ApplyGrant(ctx, name, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.DeleteGrant(ctx, name) })

	t.Run("discovery and explain", func(t *testing.T) {
		// Also refreshes kubectl's discovery cache, which explain does not.
		var row string
		for _, line := range strings.Split(kubectl(t, admin, "api-resources", "--api-group=mesh.kilo.squat.ai"), "\n") {
			if strings.HasPrefix(line, "clustermeshgrants ") {
				row = strings.Join(strings.Fields(line), " ")
			}
		}
		if row != "clustermeshgrants cmgrant mesh.kilo.squat.ai/v1alpha1 false ClusterMeshGrant" {
			t.Errorf("api-resources: %q", row)
		}
		// The aggregator loads the server's OpenAPI v3 document a while
		// after the APIService becomes available.
		var out string
		framework.EventuallyT(t, time.Minute, "kubectl explain", func() error {
			var stderr string
			var err error
			if out, stderr, err = env.Kubectl(ctx, framework.HostCluster, admin, "explain", "clustermeshgrant.spec"); err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		})
		for _, want := range []string{"memberNetworks", "localNetworks", "memberServers", "namespaceSelector", "namespaces", "Several grants covering one namespace"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("table", func(t *testing.T) {
		out := kubectl(t, admin, "get", "cmgrant", name)
		if header := strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "); header != "NAME NAMESPACES MEMBER NETWORKS LOCAL NETWORKS AGE" {
			t.Errorf("header %q\n%s", header, out)
		}
		if !strings.Contains(out, "team-x + kilo-mesh=allowed") || !strings.Contains(out, "10.0.0.0/8,192.168.0.0/16,fd00::/8") {
			t.Errorf("row:\n%s", out)
		}
		if wide := kubectl(t, admin, "get", "clustermeshgrants", name, "-o", "wide"); !strings.Contains(wide, "MEMBER SERVERS") || !strings.Contains(wide, "127.0.0.0/8") {
			t.Errorf("wide:\n%s", wide)
		}
	})
	t.Run("invalid grants name every field", func(t *testing.T) {
		bad := `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMeshGrant
metadata: {name: ` + name + `-bad}
spec:
  memberNetworks: ["0.0.0.0/0"]
  localNetworks: ["10.0.0.1/8"]
`
		_, stderr, err := kubectlIn(t, admin, bad, "create", "-f", "-")
		for _, want := range []string{"spec: Required value", `spec.memberNetworks[0]: Invalid value: "0.0.0.0/0"`, `spec.localNetworks[0]: Invalid value: "10.0.0.1/8"`} {
			if err == nil || !strings.Contains(stderr, want) {
				t.Errorf("want %q, got %v: %s", want, err, stderr)
			}
		}
	})
	t.Run("only administrators", func(t *testing.T) {
		for _, user := range []string{framework.UserTenantA, framework.UserViewerA} {
			for _, args := range [][]string{{"get", "cmgrant"}, {"get", "cmgrant", name}, {"delete", "cmgrant", name}} {
				if stderr := kubectlErr(t, user, args...); !strings.Contains(stderr, "forbidden") {
					t.Errorf("%s: kubectl %v: want Forbidden, got %s", user, args, stderr)
				}
			}
		}
		own := `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMeshGrant
metadata: {name: ` + name + `-mine}
spec: {namespaces: [tenant-a], memberNetworks: ["0.0.0.0/1", "128.0.0.0/1"]}
`
		if _, stderr, err := kubectlIn(t, framework.UserTenantA, own, "create", "-f", "-"); err == nil || !strings.Contains(stderr, "forbidden") {
			t.Errorf("a tenant granted itself: %v: %s", err, stderr)
		}
		// The shipped reader role, bound on purpose, reads and writes nothing.
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kilo-mesh:grant-reader"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: framework.UserViewerA}}}
		if _, err := env.Client(framework.HostCluster, admin).RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client(framework.HostCluster, admin).RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		})
		// The delegated authorizer caches a refusal for 10 s.
		framework.EventuallyT(t, 30*time.Second, "the grant reader reads grants", func() error {
			_, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserViewerA, "get", "cmgrant", name)
			if err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		})
		if stderr := kubectlErr(t, framework.UserViewerA, "delete", "cmgrant", name); !strings.Contains(stderr, "forbidden") {
			t.Errorf("the grant reader deleted a grant: %s", stderr)
		}
	})
}
