package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/internal/benchenv"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
	"golang.org/x/sync/errgroup"
)

// bench holds a run's environment.
type bench struct {
	config
	fleet  *fleet
	env    *framework.Env
	server *framework.MeshServer
	peers  *tracker
	meshes []*mesh
	// ipSeq numbers the endpoints the changes set, so that each is new.
	ipSeq atomic.Int64
}

// mesh is one tenant's mesh: a namespace of its own, and the members it
// joins, each an entry named c<member>.
type mesh struct {
	index     int
	namespace string
	name      string
	uid       string
	members   []int
}

func (b *bench) layoutMeshes() {
	for k := range b.config.meshes {
		m := &mesh{index: k, namespace: "bench", name: "bench"}
		if b.config.meshes > 1 {
			m.namespace, m.name = fmt.Sprintf("tenant-%03d", k), "mesh"
		}
		// Two meshes share at most one member: on a member in both, each
		// puts Peers of other clusters' networks.
		stride := b.perMesh
		if b.chain {
			stride = b.perMesh - 1
		}
		for e := range b.perMesh {
			m.members = append(m.members, (k*stride+e)%b.members)
		}
		b.meshes = append(b.meshes, m)
	}
}

// entriesPerMember is the most meshes a member is in: the tokens each
// member needs when every entry has credentials of its own.
func (b *bench) entriesPerMember() int {
	if !b.tenantTokens {
		return 0
	}
	n := make([]int, b.members)
	for _, m := range b.meshes {
		for _, i := range m.members {
			n[i]++
		}
	}
	return slices.Max(n)
}

// groups is the number of Peers a member exports to each other member of a
// mesh.
func (b *bench) groups() int {
	if b.granularity == string(meshv1alpha1.GranularityFull) {
		return b.nodes
	}
	return (b.nodes + b.perLoc - 1) / b.perLoc
}

// expectedPeers is how many Peers of the meshes member i holds when all
// are written.
func (b *bench) expectedPeers(i int) int {
	n := 0
	for _, m := range b.meshes {
		if slices.Contains(m.members, i) {
			n += (len(m.members) - 1) * b.groups()
		}
	}
	return n
}

func (b *bench) totalPeers() int {
	n := 0
	for i := range b.members {
		n += b.expectedPeers(i)
	}
	return n
}

func (b *bench) maxPeersPerMember() int {
	n := 0
	for i := range b.members {
		n = max(n, b.expectedPeers(i))
	}
	return n
}

func clusterName(i int) string { return fmt.Sprintf("c%d", i) }

// createMeshes writes the tenants' namespaces and kubeconfig Secrets, then
// creates every mesh at once, and returns how long until every Peer is on
// every member and until every mesh is Ready.
func (b *bench) createMeshes(ctx context.Context) (created, ready time.Duration, err error) {
	host := kubernetes.NewForConfigOrDie(benchenv.AdminConfig(b.env, framework.HostCluster))
	used := make([]int, b.members) // tokens handed out per member
	var g errgroup.Group
	g.SetLimit(16)
	for _, m := range b.meshes {
		if _, err := host.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.namespace}}, metav1.CreateOptions{}); err != nil {
			return 0, 0, err
		}
		for _, i := range m.members {
			mm := b.fleet.manifest.Members[i]
			token := mm.Token
			if b.tenantTokens {
				token, used[i] = mm.Tokens[used[i]], used[i]+1
			}
			kc, err := mm.Kubeconfig(token)
			if err != nil {
				return 0, 0, err
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.namespace, Name: clusterName(i) + "-kubeconfig"},
				Data: map[string][]byte{"kubeconfig": kc}}
			g.Go(func() error {
				_, err := host.CoreV1().Secrets(m.namespace).Create(ctx, secret, metav1.CreateOptions{})
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return 0, 0, fmt.Errorf("writing the kubeconfig Secrets: %w", err)
	}
	client := dynamic.NewForConfigOrDie(benchenv.AdminConfig(b.env, framework.HostCluster)).Resource(framework.ClusterMeshGVR)
	start := time.Now()
	for _, m := range b.meshes {
		obj, err := b.meshObject(m)
		if err != nil {
			return 0, 0, err
		}
		u, err := client.Namespace(m.namespace).Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return 0, 0, fmt.Errorf("creating mesh %s/%s: %w", m.namespace, m.name, err)
		}
		m.uid = string(u.GetUID())
	}
	if created, err = b.waitPeers(ctx, start); err != nil {
		return 0, 0, err
	}
	log.Printf("every Peer on every member after %s", created.Round(time.Millisecond))
	for {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, 0, err
		}
		readyMeshes := 0
		for _, u := range list.Items {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			if slices.ContainsFunc(conds, func(c any) bool {
				m, _ := c.(map[string]any)
				return m["type"] == meshv1alpha1.ConditionReady && m["status"] == "True"
			}) {
				readyMeshes++
			}
		}
		if readyMeshes == len(b.meshes) {
			return created, time.Since(start), nil
		}
		if time.Since(start) > 30*time.Minute {
			return 0, 0, fmt.Errorf("%d of %d meshes Ready after 30 minutes", readyMeshes, len(b.meshes))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitPeers waits until every member holds every Peer of its meshes, as
// its Peer watch shows them.
func (b *bench) waitPeers(ctx context.Context, start time.Time) (time.Duration, error) {
	uids := map[string]bool{}
	for _, m := range b.meshes {
		uids[m.uid] = true
	}
	lastLog := time.Now()
	for {
		missing, members := 0, 0
		for i := range b.members {
			if n := b.expectedPeers(i) - b.peers.count(i, uids); n > 0 {
				missing += n
				members++
			}
		}
		if missing == 0 {
			return time.Since(start), nil
		}
		if time.Since(lastLog) > 15*time.Second {
			log.Printf("%d Peers missing on %d members after %s", missing, members, time.Since(start).Round(time.Second))
			lastLog = time.Now()
		}
		if time.Since(start) > 30*time.Minute {
			return 0, fmt.Errorf("%d Peers missing on %d members after 30 minutes", missing, members)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// meshObject is mesh m's ClusterMesh: every member with its own pod and
// WireGuard networks, through its kubeconfig Secret.
func (b *bench) meshObject(m *mesh) (*unstructured.Unstructured, error) {
	var s strings.Builder
	fmt.Fprintf(&s, "apiVersion: mesh.kilo.squat.ai/v1alpha1\nkind: ClusterMesh\nmetadata: {name: %s, namespace: %s}\nspec:\n  clusters:\n", m.name, m.namespace)
	l := b.fleet.manifest.Layout
	for _, i := range m.members {
		fmt.Fprintf(&s, "  - name: %s\n    podCIDRs: [%q]\n    wireguardCIDR: %s\n    granularity: %s\n    kubeconfigSecretRef: {name: %s-kubeconfig}\n",
			clusterName(i), l.PodCIDR(i), l.WireGuardCIDR(i), b.granularity, clusterName(i))
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s.String()), &obj.Object); err != nil {
		return nil, err
	}
	return obj, nil
}

// memory is the server's resident set and Go heap in use.
type memory struct{ rss, heap uint64 }

func (m memory) String() string { return fmt.Sprintf("%d MiB; %d MiB", m.rss>>20, m.heap>>20) }

func (b *bench) serverMemory(ctx context.Context) (memory, error) {
	rss, _, err := benchenv.Memory(b.server.Pid())
	if err != nil {
		return memory{}, err
	}
	metrics, err := framework.Scrape(ctx, b.direct())
	if err != nil {
		return memory{}, err
	}
	heap, err := framework.MetricSum(metrics, "go_memstats_heap_inuse_bytes")
	if err != nil {
		return memory{}, err
	}
	return memory{rss: rss, heap: uint64(heap)}, nil
}

// direct is the admin's client configuration of the server itself.
func (b *bench) direct() *rest.Config { return b.server.DirectRESTConfig(framework.UserAdmin) }
