//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The reconciler end to end: the real server binary behind the aggregation
// layer of cluster 0, three real kube-apiservers as member clusters (cluster
// 0 local, 1 and 2 through kubeconfig Secrets), Nodes as kg leaves them. The
// subtests of TestReconciler build on each other, in the order of a mesh's
// life.

func TestReconciler(t *testing.T) {
	rc := startReconcilerEnv(t)
	ctx := context.Background()
	const name = "mesh"

	// Peers someone else owns: one unrelated Peer per cluster, and one on
	// cluster 0 holding the name the mesh wants for cluster-1's location b.
	foreign := map[int]map[string]*kilov1alpha1.Peer{}
	for i := range rcClusters {
		p := rc.createForeignPeer(t, i, "foreign", fmt.Sprintf("10.%d.0.0/24", 200+i))
		foreign[i] = map[string]*kilov1alpha1.Peer{p.Name: p}
	}
	takenName := planner.PeerName(rc.ns, name, clusterName(1), "location:b")
	taken := rc.createForeignPeer(t, 0, takenName, "10.210.0.0/24")
	foreign[0][taken.Name] = taken

	mesh := rc.createMesh(t, name)

	t.Run("Peers appear on every cluster and match the peers view", func(t *testing.T) {
		took := framework.EventuallyT(t, rcConverge, "Peers as the view shows", func() error { return rc.allMatchView(t, mesh) })
		t.Logf("Peers on %d clusters match the view %s after the mesh was created", rcClusters, took.Round(time.Millisecond))
		for i := range rcClusters {
			have, err := rc.peers(t, i, mesh.UID)
			if err != nil {
				t.Fatal(err)
			}
			want := 4 // two groups of each of the two other clusters
			if i == 0 {
				want = 3 // cluster-1's location b: its name is taken
			}
			if len(have) != want {
				t.Errorf("cluster %d holds %d managed Peers, want %d: %v", i, len(have), want, slices.Sorted(maps.Keys(have)))
			}
		}
		p, err := rc.peerOf(t, mesh, 2, 1, "location:a")
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.PublicKey != rc.keys[1]["c1-a1"] || p.Spec.Endpoint == nil || p.Spec.Endpoint.DNSOrIP.IP != "203.0.113.11" {
			t.Errorf("cluster-1's location a on cluster 2 = %+v, want leader c1-a1's key and endpoint", p.Spec)
		}
		if !slices.Contains(p.Spec.AllowedIPs, "10.11.2.0/24") {
			t.Errorf("location a's Peer lacks member c1-a2's pod CIDR: %v", p.Spec.AllowedIPs)
		}
	})

	t.Run("status reports conditions and per-cluster figures", func(t *testing.T) {
		framework.EventuallyT(t, rcConverge, "Ready", func() error {
			return wantCondition(rc.mesh(t, name), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady)
		})
		m := rc.mesh(t, name)
		for _, typ := range []string{meshv1alpha1.ConditionClustersReachable, meshv1alpha1.ConditionPeersApplied, meshv1alpha1.ConditionNetworksValid} {
			if err := wantCondition(m, typ, metav1.ConditionTrue, ""); err != nil {
				t.Error(err)
			}
		}
		if m.Status.ObservedGeneration != m.Generation {
			t.Errorf("observedGeneration %d, generation %d", m.Status.ObservedGeneration, m.Generation)
		}
		if !slices.Contains(m.Finalizers, reconciler.Finalizer) {
			t.Errorf("finalizers %v lack %s", m.Finalizers, reconciler.Finalizer)
		}
		if len(m.Status.Clusters) != rcClusters {
			t.Fatalf("status.clusters = %+v", m.Status.Clusters)
		}
		for i, cs := range m.Status.Clusters {
			want := meshv1alpha1.ClusterStatus{
				Name: clusterName(i), Reachable: true, Granularity: meshv1alpha1.GranularityLocation,
				Nodes: 4, ReadyNodes: 3, Locations: 2, PeersDesired: 4, PeersApplied: 4, SkippedNodes: 1,
				SkippedByReason: []meshv1alpha1.ReasonCount{{Reason: planner.ReasonNoPodCIDR, Count: 1}},
			}
			if i == 0 {
				want.PeersDesired, want.PeersApplied = 3, 3
			}
			got, _ := json.Marshal(cs)
			exp, _ := json.Marshal(want)
			if string(got) != string(exp) {
				t.Errorf("status.clusters[%d] =\n%s\nwant\n%s", i, got, exp)
			}
		}
	})

	t.Run("events name skipped nodes and conflicts", func(t *testing.T) {
		framework.EventuallyT(t, rcConverge, "events", func() error {
			skipped := rc.events(t, name, reconciler.EventNodesSkipped)
			if !slices.ContainsFunc(skipped, func(m string) bool { return strings.Contains(m, "(NoPodCIDR): c1-nopod") }) {
				return fmt.Errorf("no NodesSkipped event for c1-nopod: %q", skipped)
			}
			conflicts := rc.events(t, name, planner.ConflictNameTaken)
			if !slices.ContainsFunc(conflicts, func(m string) bool { return strings.Contains(m, takenName) }) {
				return fmt.Errorf("no %s event naming %s: %q", planner.ConflictNameTaken, takenName, conflicts)
			}
			return nil
		})
	})

	t.Run("foreign Peers are never touched, even with the name the mesh wants", func(t *testing.T) {
		for i := range rcClusters {
			if err := rc.unchanged(t, i, foreign[i]); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("a node's key change moves to its Peers", func(t *testing.T) {
		_, key, err := framework.NewWireGuardKey()
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.env.AnnotateNode(ctx, 1, "c1-a1", map[string]string{kilov1alpha1.AnnotationKey: key}); err != nil {
			t.Fatal(err)
		}
		rc.keys[1]["c1-a1"] = key
		took := framework.EventuallyT(t, rcConverge, "new key on clusters 0 and 2", func() error {
			for _, i := range []int{0, 2} {
				p, err := rc.peerOf(t, mesh, i, 1, "location:a")
				if err != nil {
					return err
				}
				if p.Spec.PublicKey != key {
					return fmt.Errorf("cluster %d: key %s", i, p.Spec.PublicKey)
				}
			}
			return nil
		})
		t.Logf("key change on both clusters after %s", took.Round(time.Millisecond))
	})

	t.Run("a node's endpoint change moves to its Peers", func(t *testing.T) {
		if err := rc.env.AnnotateNode(ctx, 2, "c2-b1", map[string]string{kilov1alpha1.AnnotationEndpoint: "198.51.100.23:51821"}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "new endpoint on clusters 0 and 1", func() error {
			for _, i := range []int{0, 1} {
				p, err := rc.peerOf(t, mesh, i, 2, "location:b")
				if err != nil {
					return err
				}
				if e := p.Spec.Endpoint; e == nil || e.DNSOrIP.IP != "198.51.100.23" || e.Port != 51821 {
					return fmt.Errorf("cluster %d: endpoint %+v", i, e)
				}
			}
			return nil
		})
	})

	t.Run("a leader change moves key and endpoint", func(t *testing.T) {
		if err := rc.env.AnnotateNode(ctx, 0, "c0-a2", map[string]string{kilov1alpha1.AnnotationLeader: "true"}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "location a of cluster 0 led by c0-a2", func() error {
			for _, i := range []int{1, 2} {
				p, err := rc.peerOf(t, mesh, i, 0, "location:a")
				if err != nil {
					return err
				}
				if p.Spec.PublicKey != rc.keys[0]["c0-a2"] || p.Spec.Endpoint == nil || p.Spec.Endpoint.DNSOrIP.IP != "203.0.113.2" {
					return fmt.Errorf("cluster %d: %+v", i, p.Spec)
				}
				if p.Annotations[planner.AnnotationSourceLeader] != "c0-a2" {
					return fmt.Errorf("cluster %d: source-leader %q", i, p.Annotations[planner.AnnotationSourceLeader])
				}
			}
			return nil
		})
	})

	t.Run("a node added or deleted changes its group's Peer", func(t *testing.T) {
		k := framework.KiloNode{Name: "c2-a3", Location: "a", Endpoint: "203.0.113.24:51820", InternalIP: "192.168.2.4/24", PodCIDR: "10.12.4.0/24"}
		if _, err := rc.env.CreateKiloNode(ctx, 2, k); err != nil {
			t.Fatal(err)
		}
		has := func(want bool) func() error {
			return func() error {
				for _, i := range []int{0, 1} {
					p, err := rc.peerOf(t, mesh, i, 2, "location:a")
					if err != nil {
						return err
					}
					if slices.Contains(p.Spec.AllowedIPs, k.PodCIDR) != want {
						return fmt.Errorf("cluster %d: allowedIPs %v", i, p.Spec.AllowedIPs)
					}
				}
				return nil
			}
		}
		framework.EventuallyT(t, rcConverge, "the new node's pod CIDR advertised", has(true))
		if err := rc.kube(2).CoreV1().Nodes().Delete(ctx, k.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "the deleted node's pod CIDR withdrawn", has(false))
		if err := rc.allMatchView(t, mesh); err != nil {
			t.Error(err)
		}
	})

	t.Run("a deleted managed Peer returns", func(t *testing.T) {
		p, err := rc.peerOf(t, mesh, 2, 0, "location:b")
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.dyn(2).Resource(kilov1alpha1.PeerResource).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		took := framework.EventuallyT(t, rcConverge, "the Peer recreated", func() error {
			q, err := rc.peerOf(t, mesh, 2, 0, "location:b")
			if err != nil {
				return err
			}
			if q.UID == p.UID {
				return errors.New("not deleted yet")
			}
			return nil
		})
		t.Logf("deleted Peer back after %s", took.Round(time.Millisecond))
		if err := rc.matchesView(t, mesh, 2); err != nil {
			t.Error(err)
		}
	})

	t.Run("an edited managed Peer is restored", func(t *testing.T) {
		p, err := rc.peerOf(t, mesh, 1, 2, "location:a")
		if err != nil {
			t.Fatal(err)
		}
		patch := []byte(`{"spec":{"allowedIPs":["10.250.0.0/24"],"persistentKeepalive":7}}`)
		if _, err := rc.dyn(1).Resource(kilov1alpha1.PeerResource).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "the Peer restored", func() error { return rc.matchesView(t, mesh, 1) })
	})

	t.Run("steady state writes nothing", func(t *testing.T) {
		framework.EventuallyT(t, rcConverge, "Ready", func() error {
			return wantCondition(rc.mesh(t, name), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady)
		})
		// Let the last writes' echoes settle.
		time.Sleep(3 * time.Second)
		writes := func(cfg *rest.Config, group, resource string) float64 {
			t.Helper()
			w, err := framework.RequestWrites(scrape(t, cfg), group, resource)
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		count := func() (peers, meshes, leases float64) {
			for i := range rcClusters {
				peers += writes(rc.env.RESTConfig(i, framework.UserAdmin), kilov1alpha1.GroupName, "peers")
			}
			meshes = writes(rc.server.DirectRESTConfig(framework.UserAdmin), meshv1alpha1.GroupName, "clustermeshes")
			leases = writes(rc.env.RESTConfig(framework.HostCluster, framework.UserAdmin), "coordination.k8s.io", "leases")
			return
		}
		p0, m0, l0 := count()
		// Long enough for every node to check in (kg's 30 s, here 15 s).
		const window = 35 * time.Second
		time.Sleep(window)
		p1, m1, l1 := count()
		t.Logf("in %s: %v Peer writes, %v ClusterMesh writes, %v Lease writes (leader election)", window, p1-p0, m1-m0, l1-l0)
		if p1 != p0 || m1 != m0 {
			t.Errorf("steady state wrote: %v Peer writes, %v ClusterMesh writes in %s", p1-p0, m1-m0, window)
		}
	})

	t.Run("an unreachable member keeps every Peer and the status says why", func(t *testing.T) {
		before := map[int]map[string]*kilov1alpha1.Peer{}
		for _, i := range []int{0, 1} {
			all, err := rc.peers(t, i, "")
			if err != nil {
				t.Fatal(err)
			}
			before[i] = all
		}
		if err := rc.env.StopCluster(2); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, 2*rcConverge, "ClustersReachable False", func() error {
			m := rc.mesh(t, name)
			if err := wantCondition(m, meshv1alpha1.ConditionClustersReachable, metav1.ConditionFalse, reconciler.ReasonUnreachable); err != nil {
				return err
			}
			if cs := m.Status.Clusters[2]; cs.Reachable || cs.LastError == "" {
				return fmt.Errorf("cluster-2 status %+v", cs)
			}
			return nil
		})
		m := rc.mesh(t, name)
		t.Logf("ClustersReachable: %s", meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionClustersReachable).Message)
		if err := wantCondition(m, meshv1alpha1.ConditionReady, metav1.ConditionFalse, reconciler.ReasonNotReady); err != nil {
			t.Error(err)
		}
		// A change between reachable clusters is still applied meanwhile.
		if err := rc.env.AnnotateNode(ctx, 0, "c0-b1", map[string]string{kilov1alpha1.AnnotationEndpoint: "198.51.100.3:51820"}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "cluster-0's change on cluster 1", func() error {
			p, err := rc.peerOf(t, mesh, 1, 0, "location:b")
			if err != nil {
				return err
			}
			if e := p.Spec.Endpoint; e == nil || e.DNSOrIP.IP != "198.51.100.3" {
				return fmt.Errorf("endpoint %+v", e)
			}
			return nil
		})
		// Well past the time cluster-2's nodes would have gone stale.
		time.Sleep(10 * time.Second)
		for _, i := range []int{0, 1} {
			for pname, p := range before[i] {
				if p.Labels[planner.LabelSourceCluster] != clusterName(2) && !strings.HasPrefix(pname, "foreign") && pname != takenName {
					delete(before[i], pname) // representing reachable clusters: may change
				}
			}
			if err := rc.unchanged(t, i, before[i]); err != nil {
				t.Errorf("while cluster 2 is down: %v", err)
			}
		}
	})

	t.Run("a member that comes back converges", func(t *testing.T) {
		if err := rc.env.StartCluster(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if err := rc.env.TouchKiloNodes(ctx, 2); err != nil {
			t.Fatal(err)
		}
		took := framework.EventuallyT(t, 3*rcConverge, "Ready again", func() error {
			if err := wantCondition(rc.mesh(t, name), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady); err != nil {
				return err
			}
			return rc.allMatchView(t, mesh)
		})
		t.Logf("converged %s after the restart", took.Round(time.Millisecond))
	})

	t.Run("two replicas have one writer", func(t *testing.T) {
		second := rc.env.StartMeshServerT(t, framework.MeshServerOptions{
			ExternalEtcd: true, SkipRegistration: true,
			ExtraArgs: append(rcServerArgs(), "--etcd-prefix="+rc.server.EtcdPrefix),
		})
		holder := func() string {
			l, err := rc.kube(framework.HostCluster).CoordinationV1().Leases(reconciler.DefaultLeaseNamespace).
				Get(ctx, reconciler.DefaultLeaseName, metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil {
				return ""
			}
			return *l.Spec.HolderIdentity
		}
		first := holder()
		if first == "" {
			t.Fatal("no Lease holder")
		}
		restore := func(i, src int, group string) {
			t.Helper()
			p, err := rc.peerOf(t, mesh, i, src, group)
			if err != nil {
				t.Fatal(err)
			}
			if err := rc.dyn(i).Resource(kilov1alpha1.PeerResource).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			framework.EventuallyT(t, rcConverge, "the deleted Peer back", func() error {
				q, err := rc.peerOf(t, mesh, i, src, group)
				if err == nil && q.UID == p.UID {
					return errors.New("not replaced yet")
				}
				return err
			})
		}
		const written = "kilo_mesh_peer_writes_total"
		wrote := func(m *framework.MeshServer) (float64, error) {
			return framework.MetricSum(scrape(t, m.DirectRESTConfig(framework.UserAdmin)), written)
		}
		restore(0, 2, "location:a")
		switch w, err := wrote(second); {
		case errors.Is(err, framework.ErrNoSamples):
			// Never wrote: the counter has no sample before its first write.
		case err != nil:
			t.Fatal(err)
		case w != 0:
			t.Errorf("the standby replica wrote %v Peers", w)
		}
		if w, err := wrote(rc.server); err != nil || w == 0 {
			t.Errorf("the leader reports no Peer writes: %v %v", w, err)
		}
		if h := holder(); h != first {
			t.Errorf("the Lease moved from %s to %s without a failure", first, h)
		}
		if !rc.server.LogContains("Started leading") || second.LogContains("Started leading") {
			t.Errorf("the logs do not show the first server leading alone")
		}

		// The leader stops: the standby takes over, and writes.
		if err := rc.server.Stop(); err != nil {
			t.Fatal(err)
		}
		took := framework.EventuallyT(t, rcConverge, "the standby leading", func() error {
			if h := holder(); h == first || h == "" {
				return fmt.Errorf("holder %q", h)
			}
			return nil
		})
		t.Logf("standby took over %s after the leader stopped", took.Round(time.Millisecond))
		restore(1, 0, "location:b")
		if w, err := wrote(second); err != nil || w == 0 {
			t.Errorf("the new leader reports no Peer writes: %v %v", w, err)
		}
		if err := second.Stop(); err != nil {
			t.Fatal(err)
		}
		startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := rc.server.Start(startCtx); err != nil {
			t.Fatalf("restarting the first server: %v", err)
		}
		framework.EventuallyT(t, rcConverge, "Peers as the view shows", func() error { return rc.allMatchView(t, mesh) })
	})

	t.Run("metrics and readyz", func(t *testing.T) {
		// The restarted server leads again once the standby let go.
		framework.EventuallyT(t, rcConverge, "the restarted server reconciling", func() error {
			m := scrape(t, rc.server.DirectRESTConfig(framework.UserAdmin))
			for _, name := range []string{
				"kilo_mesh_reconcile_duration_seconds_count", "kilo_mesh_queue_depth",
				"kilo_mesh_peers_managed", "kilo_mesh_cluster_reachable",
			} {
				if _, err := framework.MetricSum(m, name); err != nil {
					return err
				}
			}
			return nil
		})
		client, err := kubernetes.NewForConfig(rc.server.DirectRESTConfig(framework.UserAdmin))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
		if err != nil {
			t.Fatalf("/readyz?verbose: %v\n%s", err, raw)
		}
		// One check per cache of the server's own storage (meshes; grants
		// with the local cluster's namespaces), and none of the member
		// clusters: they are the tenants', and must not take the server out
		// of its Service.
		var caches []string
		for _, line := range strings.Split(string(raw), "\n") {
			name, ok := strings.CutPrefix(line, "[+]")
			name = strings.TrimSuffix(name, " ok")
			if ok && !strings.HasPrefix(name, "poststarthook/") && (strings.Contains(name, "cache") || strings.Contains(name, "member")) {
				caches = append(caches, name)
			}
		}
		if !slices.Equal(caches, []string{"clustermesh-cache", "clustermeshgrant-cache"}) {
			t.Errorf("/readyz checks of caches %q, want only clustermesh-cache and clustermeshgrant-cache:\n%s", caches, raw)
		}
	})

	t.Run("deleting the mesh removes its Peers and nothing else", func(t *testing.T) {
		if err := rc.meshes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		took := framework.EventuallyT(t, rcConverge, "the mesh and its Peers gone", func() error {
			if rc.mesh(t, name) != nil {
				return errors.New("the mesh is still there")
			}
			for i := range rcClusters {
				have, err := rc.peers(t, i, mesh.UID)
				if err != nil {
					return err
				}
				if len(have) > 0 {
					return fmt.Errorf("cluster %d still holds %v", i, slices.Sorted(maps.Keys(have)))
				}
			}
			return nil
		})
		t.Logf("mesh and Peers gone %s after the delete", took.Round(time.Millisecond))
		for i := range rcClusters {
			if err := rc.unchanged(t, i, foreign[i]); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("deleting a mesh with an unreachable member waits, then releases it with a warning", func(t *testing.T) {
		const name2 = "mesh-two"
		mesh2 := rc.createMesh(t, name2)
		framework.EventuallyT(t, rcConverge, "Peers as the view shows", func() error { return rc.allMatchView(t, mesh2) })
		framework.EventuallyT(t, rcConverge, "status with applied Peers", func() error {
			return wantCondition(rc.mesh(t, name2), meshv1alpha1.ConditionPeersApplied, metav1.ConditionTrue, "")
		})
		left, err := rc.peers(t, 2, mesh2.UID)
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.env.StopCluster(2); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, 2*rcConverge, "cluster 2 unreachable", func() error {
			return wantCondition(rc.mesh(t, name2), meshv1alpha1.ConditionClustersReachable, metav1.ConditionFalse, "")
		})
		deleted := time.Now()
		if err := rc.meshes().Delete(ctx, name2, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "the deletion waiting for cluster-2", func() error {
			m := rc.mesh(t, name2)
			if err := wantCondition(m, meshv1alpha1.ConditionReady, metav1.ConditionFalse, reconciler.ReasonRemovalBlocked); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady); !strings.Contains(c.Message, clusterName(2)) {
				return fmt.Errorf("Ready does not name cluster-2: %s", c.Message)
			}
			for _, i := range []int{0, 1} {
				have, err := rc.peers(t, i, mesh2.UID)
				if err != nil {
					return err
				}
				if len(have) > 0 {
					return fmt.Errorf("cluster %d still holds %d Peers", i, len(have))
				}
			}
			return nil
		})
		framework.EventuallyT(t, rcDeletionTimeout+rcConverge, "the mesh released", func() error {
			if rc.mesh(t, name2) != nil {
				return errors.New("still there")
			}
			return nil
		})
		if waited := time.Since(deleted); waited < rcDeletionTimeout-2*time.Second {
			t.Errorf("released after %s, before --mesh-deletion-timeout=%s", waited, rcDeletionTimeout)
		}
		msgs := rc.events(t, name2, reconciler.EventPeersLeftBehind)
		if len(msgs) != 1 {
			t.Fatalf("PeersLeftBehind events: %q", msgs)
		}
		for pname := range left {
			if !strings.Contains(msgs[0], pname) {
				t.Errorf("the warning does not name %s: %s", pname, msgs[0])
			}
		}
		if !strings.Contains(msgs[0], clusterName(2)) {
			t.Errorf("the warning does not name cluster-2: %s", msgs[0])
		}

		// The Peers are indeed still on cluster 2, and removed by hand.
		if err := rc.env.StartCluster(ctx, 2); err != nil {
			t.Fatal(err)
		}
		have, err := rc.peers(t, 2, mesh2.UID)
		if err != nil {
			t.Fatal(err)
		}
		if len(have) != len(left) {
			t.Errorf("cluster 2 holds %d of the mesh's Peers, want the %d left behind", len(have), len(left))
		}
		if err := rc.dyn(2).Resource(kilov1alpha1.PeerResource).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: planner.LabelMeshUID + "=" + string(mesh2.UID)}); err != nil {
			t.Fatal(err)
		}
		for i := range rcClusters {
			if err := rc.unchanged(t, i, foreign[i]); err != nil {
				t.Error(err)
			}
		}
	})

}
