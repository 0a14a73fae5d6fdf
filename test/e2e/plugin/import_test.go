//go:build e2e

package plugin

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/migrate"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The predecessor's sample (its README's mesh, and two Peers it wrote on
// cluster-a for cluster-b: a per-node Peer and an old anchor Peer with the
// same key) and its CRD, copied from the shared reference data.
const (
	sampleFile  = "../testdata/predecessor-sample.yaml"
	sampleCRD   = "../testdata/predecessor-crd-typed.yaml"
	sampleNS    = "kilo-system"
	sampleMesh  = "my-mesh"
	sampleKeyB1 = "GnNqPYR2q1Xh5kzqkq3kJ8mD3k7wq3oUuQJwZC0n9Xk="
)

// TestImportAdopt moves the predecessor's sample mesh over: cluster 0 is
// its cluster-a (local), cluster 1 its cluster-b. Besides the sample's two
// Peers, the predecessor's other Peers are there as it writes them: a
// per-node Peer for every node (wrong under location granularity: the
// non-leaders' are useless) and an anchor Peer sharing the first node's key.
func TestImportAdopt(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 2})
	env.StartMeshServerT(t, framework.MeshServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	keys := map[string]string{"node-b1": sampleKeyB1}
	for _, n := range []string{"node-a1", "node-a2", "node-b2"} {
		_, pub, err := framework.NewWireGuardKey()
		if err != nil {
			t.Fatal(err)
		}
		keys[n] = pub
	}
	for _, n := range []struct {
		cluster int
		node    framework.KiloNode
	}{
		{0, framework.KiloNode{Name: "node-a1", Key: keys["node-a1"], InternalIP: "192.168.1.11/24", Location: "a", Leader: true, Endpoint: "203.0.113.41:51820", WireGuardIP: "10.200.0.1/24", PodCIDR: "10.1.1.0/24"}},
		{0, framework.KiloNode{Name: "node-a2", Key: keys["node-a2"], InternalIP: "192.168.1.12/24", Location: "a", Endpoint: "203.0.113.42:51820", PodCIDR: "10.1.2.0/24"}},
		{1, framework.KiloNode{Name: "node-b1", Key: keys["node-b1"], InternalIP: "192.168.2.11/24", Location: "b", Leader: true, Endpoint: "203.0.113.51:51820", WireGuardIP: "10.200.1.1/24", PodCIDR: "10.2.1.0/24"}},
		{1, framework.KiloNode{Name: "node-b2", Key: keys["node-b2"], InternalIP: "192.168.2.12/24", Location: "b", Endpoint: "203.0.113.52:51820", PodCIDR: "10.2.2.0/24"}},
	} {
		if _, err := env.CreateKiloNode(ctx, n.cluster, n.node); err != nil {
			t.Fatalf("node %s: %v", n.node.Name, err)
		}
	}
	go env.KeepKiloNodesFresh(ctx, 15*time.Second)

	// The predecessor's world: its CRD, its namespace, cluster-b's
	// kubeconfig Secret (here for the member identity), its mesh with the
	// finalizer its operator puts on, its Peers on both clusters.
	env.KubectlT(t, 0, framework.UserAdmin, "apply", "-f", sampleCRD)
	env.KubectlT(t, 0, framework.UserAdmin, "wait", "--for=condition=Established", "--timeout=60s", "crd/clustermeshes.kilo.squat.ai")
	env.KubectlT(t, 0, framework.UserAdmin, "create", "namespace", sampleNS)
	env.KubectlT(t, 1, framework.UserAdmin, "apply", "-k", "../../../artifacts/member")
	token, err := env.ServiceAccountToken(ctx, 1, member.Namespace, member.ServiceAccount, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := env.KubeconfigFor(1, member.ServiceAccount, token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client(0, framework.UserAdmin).CoreV1().Secrets(sampleNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-b-kubeconfig", Namespace: sampleNS},
		Data:       map[string][]byte{"kubeconfig": kc},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.KubectlT(t, 0, framework.UserAdmin, "apply", "-f", sampleFile)
	env.KubectlT(t, 0, framework.UserAdmin, "patch", "clustermeshes.kilo.squat.ai", sampleMesh, "-n", sampleNS, "--type=merge",
		"-p", `{"metadata":{"finalizers":["`+migrate.PredecessorFinalizer+`"]}}`)
	env.KubectlInT(t, 0, framework.UserAdmin, predecessorPeer("cluster-b", "node-b2", keys["node-b2"], "10.2.2.0/24"), "apply", "-f", "-")
	env.KubectlInT(t, 1, framework.UserAdmin, predecessorPeer("cluster-a", "node-a1", keys["node-a1"], "10.1.1.0/24", "10.200.0.1/32")+"---\n"+
		predecessorPeer("cluster-a", "node-a2", keys["node-a2"], "10.1.2.0/24")+"---\n"+
		predecessorPeer("cluster-a", "anchor", keys["node-a1"], "10.96.0.0/12"), "apply", "-f", "-")
	predecessorRVs := func() map[string]string {
		out := map[string]string{}
		for i := range 2 {
			for _, p := range listPeers(t, env, i) {
				if p.Labels[migrate.LabelPredecessorMesh] == sampleMesh {
					out[fmt.Sprintf("%d/%s", i, p.Name)] = p.ResourceVersion
				}
			}
		}
		return out
	}
	original := predecessorRVs()
	if len(original) != 6 {
		t.Fatalf("set-up: %d predecessor Peers, want 6", len(original))
	}

	t.Run("dry run converts and writes nothing", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "import", "-f", sampleFile, "--dry-run")
		for _, want := range []string{"apiVersion: mesh.kilo.squat.ai/v1alpha1", "namespace: kilo-system", "serviceCIDR: 10.112.0.0/12", "wireguardCIDR: 10.200.1.0/24"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("dry run output lacks %q:\n%s", want, r)
			}
		}
		if out, _, _ := env.Kubectl(ctx, 0, framework.UserAdmin, "get", "clustermeshes.mesh.kilo.squat.ai", "-n", sampleNS, "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("dry run created %s", out)
		}
	})

	t.Run("the flat form lists what to fill in and writes nothing", func(t *testing.T) {
		flat := `apiVersion: kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata: {name: flat-mesh, namespace: kilo-system}
spec:
  clusters:
  - {name: cluster-a, local: true, allowedNetworks: ["10.1.0.0/16", "10.200.0.0/24"]}
  - {name: cluster-b, kubeconfigSecretRef: {name: cluster-b-kubeconfig, key: kubeconfig}, allowedNetworks: ["10.2.0.0/16", "10.200.1.0/24"]}
`
		file := t.TempDir() + "/flat.yaml"
		if err := os.WriteFile(file, []byte(flat), 0o600); err != nil {
			t.Fatal(err)
		}
		r := mesh(t, env, framework.UserAdmin, "import", "-f", file)
		if r.code != 1 || !strings.Contains(r.stderr, "cluster-b: wireguardCIDR (required), one of 10.2.0.0/16, 10.200.1.0/24") ||
			!strings.Contains(r.stdout, "name: flat-mesh") || !strings.Contains(r.stdout, "wireguardCIDR: <the Kilo subnet") || strings.Contains(r.stdout, "null") {
			t.Errorf("import of the flat form: want exit 1, the fields to fill in and the mesh to fill them in, got %s", r)
		}
		if out, _, _ := env.Kubectl(ctx, 0, framework.UserAdmin, "get", "clustermeshes.mesh.kilo.squat.ai", "-n", sampleNS, "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("import of the flat form created %s", out)
		}
	})

	t.Run("import creates the mesh and lists the predecessor's Peers", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "import", "-f", sampleFile)
		for _, want := range []string{"ClusterMesh kilo-system/my-mesh (mesh.kilo.squat.ai) applied", "PublicKeyInUse", "run this again with --adopt"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("import output lacks %q:\n%s", want, r)
			}
		}
		for _, row := range [][]string{
			{"cluster-a", "my-mesh--cluster-b--node-b1", "cluster-b", "adopt"},
			{"cluster-a", "my-mesh--cluster-b--anchor", "cluster-b", "remove"},
			{"cluster-a", "my-mesh--cluster-b--node-b2", "cluster-b", "remove"},
			{"cluster-b", "my-mesh--cluster-a--node-a1", "cluster-a", "adopt"},
			{"cluster-b", "my-mesh--cluster-a--anchor", "cluster-a", "remove"},
			{"cluster-b", "my-mesh--cluster-a--node-a2", "cluster-a", "remove"},
		} {
			if !hasRow(r.stdout, row...) {
				t.Errorf("import output lacks a row %v:\n%s", row, r)
			}
		}
		if got := predecessorRVs(); !mapsEqual(got, original) {
			t.Errorf("import without --adopt touched the predecessor's Peers: %v -> %v", original, got)
		}
	})

	t.Run("a fully conflicted mesh is not Ready", func(t *testing.T) { testFullyConflicted(t, env) })

	t.Run("--adopt refuses while the predecessor operator runs", func(t *testing.T) {
		// What the operator does first on every event of its ClusterMesh:
		// put its finalizer back.
		stop := runFinalizerKeeper(ctx, t, env)
		r := mesh(t, env, framework.UserAdmin, "import", "-f", sampleFile, "--adopt", "--operator-probe", "5s")
		stop()
		if r.code != 1 || !strings.Contains(r.stderr, "the predecessor operator is running") {
			t.Errorf("--adopt with the operator running: want exit 1 saying so, got %s", r)
		}
		if got := predecessorRVs(); !mapsEqual(got, original) {
			t.Errorf("a refused --adopt touched the predecessor's Peers: %v -> %v", original, got)
		}
	})

	t.Run("--adopt leaves one Peer per group and no key twice", func(t *testing.T) {
		// What each cluster must never lose for longer than one apply: the
		// other cluster's leader key, and cluster-b's service network (the
		// old anchor Peer's, then the group Peer's).
		watch := watchGaps(ctx, t, env, map[string]func(cluster int, peers []kilov1alpha1.Peer) bool{
			"cluster-a holds node-b1's key": func(c int, peers []kilov1alpha1.Peer) bool {
				return c != 0 || slices.ContainsFunc(peers, func(p kilov1alpha1.Peer) bool { return p.Spec.PublicKey == keys["node-b1"] })
			},
			"cluster-b holds node-a1's key": func(c int, peers []kilov1alpha1.Peer) bool {
				return c != 1 || slices.ContainsFunc(peers, func(p kilov1alpha1.Peer) bool { return p.Spec.PublicKey == keys["node-a1"] })
			},
			"cluster-a routes cluster-b's services": func(c int, peers []kilov1alpha1.Peer) bool {
				return c != 0 || slices.ContainsFunc(peers, func(p kilov1alpha1.Peer) bool { return slices.Contains(p.Spec.AllowedIPs, "10.112.0.0/12") })
			},
		})
		r := mustMesh(t, env, framework.UserAdmin, "import", "-f", sampleFile, "--adopt", "--operator-probe", "3s")
		gaps := watch()
		for _, what := range []string{"cluster-a holds node-b1's key", "cluster-b holds node-a1's key", "cluster-a routes cluster-b's services"} {
			gap := gaps[what]
			// One apply takes milliseconds here; a gap of seconds would be
			// one of deletion before replacement.
			if gap > 2*time.Second {
				t.Errorf("%s: false for %s during the hand-over", what, gap)
			}
			t.Logf("%s: longest gap %s", what, gap)
		}
		if !strings.Contains(r.stdout, "The predecessor operator is stopped") || !strings.Contains(r.stdout, "Handed 6 Peers over") ||
			!strings.Contains(r.stdout, "Done: every cluster holds one Peer") {
			t.Errorf("--adopt output:\n%s", r)
		}
		for i, source := range []string{"cluster-b", "cluster-a"} {
			peers := listPeers(t, env, i)
			if len(peers) != 1 {
				t.Errorf("cluster %d holds %d Peers, want exactly 1 (the group of %s): %v", i, len(peers), source, names(peers))
				continue
			}
			p := peers[0]
			if p.Labels[planner.LabelSourceCluster] != source || p.Labels[planner.LabelMeshName] != sampleMesh || p.Labels[migrate.LabelPredecessorMesh] != "" {
				t.Errorf("cluster %d: Peer %s has labels %v", i, p.Name, p.Labels)
			}
			want := map[string]string{"cluster-b": keys["node-b1"], "cluster-a": keys["node-a1"]}[source]
			if p.Spec.PublicKey != want {
				t.Errorf("cluster %d: Peer %s has key %s, want the leader's %s", i, p.Name, p.Spec.PublicKey, want)
			}
		}
		b := listPeers(t, env, 0)
		if len(b) == 1 && !slices.Equal(b[0].Spec.AllowedIPs, []string{"10.2.1.0/24", "10.2.2.0/24", "10.200.1.1/32", "10.112.0.0/12"}) {
			t.Errorf("cluster-b's group Peer on cluster-a: allowedIPs %v, want both nodes' pod CIDRs, the WireGuard IP and the service CIDR", b[0].Spec.AllowedIPs)
		}
		old, err := env.Dynamic(0, framework.UserAdmin).Resource(migrate.PredecessorResource).Namespace(sampleNS).Get(ctx, sampleMesh, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(old.GetFinalizers(), migrate.PredecessorFinalizer) {
			t.Errorf("the predecessor's finalizer is still on its ClusterMesh")
		}
	})

	t.Run("a rerun finds nothing to adopt", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "import", "-f", sampleFile, "--adopt", "--operator-probe", "1s")
		if !strings.Contains(r.stdout, "nothing to adopt") {
			t.Errorf("rerun:\n%s", r)
		}
	})
}

// predecessorPeer is a Peer as the predecessor operator writes it on a
// member cluster for node of source.
func predecessorPeer(source, node, key string, allowed ...string) string {
	p := map[string]any{
		"apiVersion": "kilo.squat.ai/v1alpha1",
		"kind":       "Peer",
		"metadata": map[string]any{
			"name":   sampleMesh + "--" + source + "--" + node,
			"labels": map[string]any{migrate.LabelPredecessorMesh: sampleMesh, migrate.LabelPredecessorSource: source},
		},
		"spec": map[string]any{"allowedIPs": allowed, "publicKey": key, "endpoint": map[string]any{"dnsOrIP": map[string]any{"ip": "203.0.113.99"}, "port": 51820}},
	}
	out, err := yaml.Marshal(p)
	if err != nil {
		panic(err)
	}
	return string(out)
}

func listPeers(t *testing.T, env *framework.Env, cluster int) []kilov1alpha1.Peer {
	t.Helper()
	list, err := env.Dynamic(cluster, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]kilov1alpha1.Peer, len(list.Items))
	for i, u := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func names(peers []kilov1alpha1.Peer) []string {
	var out []string
	for _, p := range peers {
		out = append(out, p.Name)
	}
	return out
}

// hasRow reports whether a line of out has fields among its
// whitespace-separated fields, in that order and adjacent.
func hasRow(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+len(fields) <= len(f); i++ {
			if slices.Equal(f[i:i+len(fields)], fields) {
				return true
			}
		}
	}
	return false
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// runFinalizerKeeper stands in for a running predecessor operator: it puts
// the finalizer back on the predecessor's ClusterMesh whenever it is gone,
// as that operator's reconciler does on every event. It returns a stop
// function.
func runFinalizerKeeper(ctx context.Context, t *testing.T, env *framework.Env) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	res := env.Dynamic(0, framework.UserAdmin).Resource(migrate.PredecessorResource).Namespace(sampleNS)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if m, err := res.Get(ctx, sampleMesh, metav1.GetOptions{}); err == nil && !slices.Contains(m.GetFinalizers(), migrate.PredecessorFinalizer) {
				patch := `{"metadata":{"finalizers":["` + migrate.PredecessorFinalizer + `"]}}`
				if _, err := res.Patch(ctx, sampleMesh, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "finalizer keeper: %v\n", err)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// watchGaps lists the Peers of clusters 0 and 1 every 50 ms and measures,
// for each named condition, the longest time it was false. The returned
// function stops watching and reports.
func watchGaps(ctx context.Context, t *testing.T, env *framework.Env, conds map[string]func(int, []kilov1alpha1.Peer) bool) func() map[string]time.Duration {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan map[string]time.Duration)
	go func() {
		longest := map[string]time.Duration{}
		since := map[string]time.Time{}
		for ctx.Err() == nil {
			for c := range 2 {
				list, err := env.Dynamic(c, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).List(ctx, metav1.ListOptions{})
				if err != nil {
					continue
				}
				peers := make([]kilov1alpha1.Peer, len(list.Items))
				for i, u := range list.Items {
					_ = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &peers[i])
				}
				now := time.Now()
				for what, ok := range conds {
					switch start, open := since[what]; {
					case ok(c, peers) && open:
						longest[what] = max(longest[what], now.Sub(start))
						delete(since, what)
					case !ok(c, peers) && !open:
						since[what] = now
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		for what, start := range since {
			longest[what] = max(longest[what], time.Since(start))
		}
		done <- longest
	}()
	return func() map[string]time.Duration { cancel(); return <-done }
}
