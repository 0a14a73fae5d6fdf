//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

const (
	// hogMeshes meshes of hogNodes Nodes each, one Peer a Node on the
	// host: the write load one tenant puts on the host's connection.
	hogMeshes = 4
	hogNodes  = 2000
	// hogConverge bounds how long the host takes to hold every Peer of
	// the attack (hogMeshes*hogNodes writes at the member QPS, under load).
	hogConverge = 10 * time.Minute
	// renames is how often the renamed mesh's clusters are renamed.
	renames = 30
)

// TestTenantFairness attacks the real server with one tenant's large
// passes and many renames, as deployed (--memory-limit): another tenant's
// small change reaches the host while four meshes of 2,000 Peers each are
// being written there, and nothing of either is lost; the metric series
// of renamed clusters go. The delays it logs are the figures of
// docs/security.md; none is asserted.
func TestTenantFairness(t *testing.T) {
	rc := startReconcilerEnv(t, tsServer(t))
	ts := &tsEnv{rcEnv: rc}
	first := rc.createMesh(t, "first")
	framework.EventuallyT(t, rcConverge, "the other tenant's mesh Ready and applied", func() error {
		if err := wantCondition(rc.mesh(t, "first"), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady); err != nil {
			return err
		}
		return rc.allMatchView(t, first)
	})

	t.Run("the series of clusters that left a mesh go", ts.testRenamedSeries)

	t.Run("another tenant's small change is written between a tenant's large passes", func(t *testing.T) {
		idle := ts.newNodeDelay(t, first, "q1", 21, hogConverge)
		ns := ts.namespace(t, "hog")
		var hogs []string
		for k := range hogMeshes {
			fm := ts.servingMember(t, framework.FakeContent{Nodes: hogNodes, FirstNode: int64(k) * 2048, PodCIDRPerNode: true})
			kc, err := fm.Kubeconfig()
			if err != nil {
				t.Fatal(err)
			}
			secret := fmt.Sprintf("hog-%d", k)
			ts.putSecret(t, ns, secret, kc)
			// Node n's /28 is 10.200.0.0 + 16n: the meshes' Nodes lie in
			// /17s of their own.
			far := fmt.Sprintf("10.%d.%d.0/17", 200+k/2, k%2*128)
			entry := entryYAML("far", secret, far, fmt.Sprintf("10.%d.0.0/16", 190+k)) + "    granularity: Full\n"
			name := fmt.Sprintf("hog-%d", k)
			ts.create(t, ns, ts.meshYAML(name, fmt.Sprintf("10.%d", 170+k), fmt.Sprintf("10.%d", 180+k), entry))
			hogs = append(hogs, name)
		}
		// The attack is under way: its passes are writing.
		framework.EventuallyT(t, hogConverge, "the tenant's passes writing on the host", func() error {
			if n := ts.hostPeersOf(t, ns); n < 200 {
				return fmt.Errorf("%d of the tenant's Peers on the host", n)
			}
			return nil
		})
		written := ts.hostPeersOf(t, ns)
		attacked := ts.newNodeDelay(t, first, "q2", 22, hogConverge)
		t.Logf("the other tenant's new node reached the host %s after it was created without the attack, %s under it "+
			"(%d of the attack's %d Peers on the host when it was created, %d after)",
			idle.Round(10*time.Millisecond), attacked.Round(10*time.Millisecond), written, hogMeshes*hogNodes, ts.hostPeersOf(t, ns))

		start := time.Now()
		framework.EventuallyT(t, hogConverge, "every Peer of the attack on the host", func() error {
			var errs []error
			for _, name := range hogs {
				errs = append(errs, ts.hostHolds(t, ns, name, hogNodes))
			}
			return errors.Join(errs...)
		})
		t.Logf("all %d Peers of the attack on the host %s later", hogMeshes*hogNodes, time.Since(start).Round(time.Second))
		framework.EventuallyT(t, rcConverge, "the other tenant's mesh Ready and applied", func() error {
			if err := wantCondition(rc.mesh(t, "first"), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady); err != nil {
				return err
			}
			return rc.allMatchView(t, first)
		})
	})
}

// newNodeDelay adds a node in a new location of cluster 1 and returns how
// long its Peer took to reach the host, which must happen within timeout.
func (ts *tsEnv) newNodeDelay(t *testing.T, mesh *meshv1alpha1.ClusterMesh, location string, host int, timeout time.Duration) time.Duration {
	t.Helper()
	node := framework.KiloNode{Name: "c1-" + location, Location: location, Endpoint: fmt.Sprintf("203.0.113.%d:51820", host),
		InternalIP: fmt.Sprintf("192.168.1.%d/24", host), PodCIDR: fmt.Sprintf("10.11.%d.0/24", host)}
	start := time.Now()
	if _, err := ts.env.CreateKiloNode(context.Background(), 1, node); err != nil {
		t.Fatal(err)
	}
	group := "location:" + location
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		_, err := ts.peerOf(t, mesh, framework.HostCluster, 1, group)
		if err == nil {
			return time.Since(start)
		}
		if !apierrors.IsNotFound(err) {
			t.Fatalf("reading the Peer of %s on the host: %v", group, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the Peer of %s of mesh %s not on the host %s after its node was created", group, mesh.Name, timeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// hostPeersOf counts the Peers on the host of the meshes of namespace ns.
func (ts *tsEnv) hostPeersOf(t *testing.T, ns string) int {
	t.Helper()
	list, err := ts.dyn(framework.HostCluster).Resource(kilov1alpha1.PeerResource).List(context.Background(),
		metav1.ListOptions{LabelSelector: planner.LabelMeshNamespace + "=" + ns})
	if err != nil {
		t.Fatalf("listing the host's Peers: %v", err)
	}
	return len(list.Items)
}

// hostHolds checks that the host holds the n Peers of mesh ns/name, each
// with the spec of the mesh's peers view.
func (ts *tsEnv) hostHolds(t *testing.T, ns, name string, n int) error {
	t.Helper()
	mesh := ts.get(t, ns, name)
	raw, err := ts.kube(framework.HostCluster).Discovery().RESTClient().Get().
		AbsPath("/apis", framework.MeshGroup, framework.MeshVersion, "namespaces", ns, "clustermeshes", name, "peers").
		Param("cluster", "home").DoRaw(context.Background())
	if err != nil {
		return fmt.Errorf("peers view of %s/%s: %w", ns, name, err)
	}
	var want kilov1alpha1.PeerList
	if err := yaml.Unmarshal(raw, &want); err != nil {
		return err
	}
	have, err := ts.peers(t, framework.HostCluster, mesh.UID)
	if err != nil {
		return err
	}
	if len(want.Items) != n {
		return fmt.Errorf("mesh %s: the view puts %d Peers on the host, want %d", name, len(want.Items), n)
	}
	missing, differ := 0, 0
	for _, w := range want.Items {
		switch h := have[w.Name]; {
		case h == nil:
			missing++
		case !equalSpec(h.Spec, w.Spec):
			differ++
		}
	}
	if missing+differ > 0 || len(have) != n {
		return fmt.Errorf("mesh %s: %d Peers on the host, %d of the view's %d missing, %d not as planned", name, len(have), missing, n, differ)
	}
	return nil
}

// testRenamedSeries renames both clusters of a mesh again and again: the
// server's /metrics keeps the series of the clusters the mesh lists now,
// none of those it listed before.
func (ts *tsEnv) testRenamedSeries(t *testing.T) {
	fm := ts.servingMember(t, framework.FakeContent{Nodes: 3, FirstNode: 10000, PodCIDRPerNode: true})
	ns := ts.meshOf(t, "renamed", "10.150", "10.151", entryYAML("far", "far", "10.202.0.0/16", "10.152.0.0/16"),
		map[string]*framework.FakeMember{"far": fm})
	meshes := ts.dyn(framework.HostCluster).Resource(framework.ClusterMeshGVR).Namespace(ns)
	names := []string{"home", "far"}
	for i := range renames + 1 {
		if i > 0 {
			names = []string{fmt.Sprintf("home-%d", i), fmt.Sprintf("far-%d", i)}
			// The server's status writes race a user's read-modify-write, as kubectl edit's do.
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				u, err := meshes.Get(context.Background(), "renamed", metav1.GetOptions{})
				if err != nil {
					return err
				}
				clusters, _, err := unstructured.NestedSlice(u.Object, "spec", "clusters")
				if err != nil {
					return err
				}
				for j := range clusters {
					clusters[j].(map[string]any)["name"] = names[j]
				}
				if err := unstructured.SetNestedSlice(u.Object, clusters, "spec", "clusters"); err != nil {
					return err
				}
				_, err = meshes.Update(context.Background(), u, metav1.UpdateOptions{})
				return err
			}); err != nil {
				t.Fatalf("rename %d: %v", i, err)
			}
		}
		framework.EventuallyT(t, rcConverge, "the status of the renamed clusters", func() error {
			m := ts.get(t, ns, "renamed")
			var got []string
			for _, c := range m.Status.Clusters {
				got = append(got, c.Name)
			}
			if m.Status.ObservedGeneration != m.Generation || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(names))) {
				return fmt.Errorf("status of generation %d lists %v, want %v at generation %d", m.Status.ObservedGeneration, got, names, m.Generation)
			}
			return nil
		})
	}
	raw := scrape(t, ts.server.DirectRESTConfig(framework.UserAdmin))
	mesh := ns + "/renamed"
	total := 0
	var stale []string
	for _, metric := range []string{"kilo_mesh_peers_managed", "kilo_mesh_peers_desired", "kilo_mesh_cluster_reachable",
		"kilo_mesh_apply_errors_total", "kilo_mesh_peer_writes_total", "kilo_mesh_member_credential_expiry_timestamp_seconds"} {
		series, err := framework.MetricSeries(raw, metric)
		if errors.Is(err, framework.ErrNoSamples) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, labels := range series {
			if labels["mesh"] != mesh {
				continue
			}
			total++
			if !slices.Contains(names, labels["cluster"]) {
				stale = append(stale, metric+"{cluster="+labels["cluster"]+"}")
			}
		}
	}
	t.Logf("after %d renames of both clusters, %d series of the mesh, %d of clusters it no longer lists", renames, total, len(stale))
	if total == 0 {
		t.Fatal("no series of the renamed mesh: the scrape shows nothing")
	}
	if len(stale) > 0 {
		t.Errorf("series of clusters the mesh no longer lists: %s", strings.Join(stale[:min(len(stale), 10)], ", "))
	}
	ts.delete(t, ns, "renamed")
}
