//go:build e2e

package install

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// haMeshManifest joins cluster 0 (local) and cluster 1 with networks of
// their own, apart from every other test's.
const haMeshManifest = `
apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: ha
spec:
  clusters:
  - name: cluster-0
    local: true
    podCIDRs: ["10.60.0.0/16"]
    wireguardCIDR: 10.70.0.0/16
  - name: cluster-1
    kubeconfigSecretRef:
      name: cluster-1-kubeconfig
    podCIDRs: ["10.61.0.0/16"]
    wireguardCIDR: 10.71.0.0/16
`

// haNode leads location loc of cluster i.
func haNode(i, host int, loc string) framework.KiloNode {
	return framework.KiloNode{
		Name:        fmt.Sprintf("ha-%d-%s", i, loc),
		Location:    loc,
		Endpoint:    fmt.Sprintf("203.0.113.%d:51820", 100+10*i+host),
		InternalIP:  fmt.Sprintf("192.168.%d.%d/24", 60+i, host),
		PodCIDR:     fmt.Sprintf("10.%d.%d.0/24", 60+i, host),
		WireGuardIP: fmt.Sprintf("10.%d.0.%d/16", 70+i, host),
		Leader:      true,
	}
}

// haChange is a node change the new leader must apply: the endpoint of a
// node of cluster from, which the Peer on cluster to carries.
type haChange struct {
	from, to int
	node     string
	ip       string
}

// haFigures are what one failover took, from the signal.
type haFigures struct {
	how                string
	leaseTaken         time.Duration
	applied            time.Duration
	apiFailed, apiSent int
}

func testHAFailover(t *testing.T, ctx context.Context, bed *haBed) {
	for i := range 2 {
		for host, loc := range map[int]string{1: "a", 2: "b"} {
			n := haNode(i, host, loc)
			if _, err := env.CreateKiloNode(ctx, i, n); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = env.Client(i, admin).CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
			})
		}
	}
	fresh, stopFresh := context.WithCancel(ctx)
	t.Cleanup(stopFresh)
	go env.KeepKiloNodesFresh(fresh, 15*time.Second)
	ns, err := env.NewNamespace(ctx, "ha-peers")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.CreateKubeconfigSecret(ctx, ns, "cluster-1-kubeconfig", 1, admin); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(haMeshManifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	meshes := env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR).Namespace(ns)
	mesh, err := meshes.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(mesh.GetUID())
	// Registered after the servers' cleanups, so run before them: the
	// leader removes the mesh's Peers, which no later test may find.
	t.Cleanup(func() {
		ctx := context.Background()
		if err := meshes.Delete(ctx, "ha", metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the mesh: %v", err)
			return
		}
		framework.EventuallyT(t, time.Minute, "the mesh's Peers removed", func() error {
			for i := range 2 {
				if ps := meshPeers(t, ctx, i, uid); len(ps) > 0 {
					return fmt.Errorf("cluster %d holds %d", i, len(ps))
				}
			}
			return nil
		})
	})
	framework.EventuallyT(t, time.Minute, "two Peers of the mesh on each cluster", func() error {
		for i := range 2 {
			if ps := meshPeers(t, ctx, i, uid); len(ps) != 2 {
				return fmt.Errorf("cluster %d holds %d", i, len(ps))
			}
		}
		return nil
	})
	framework.EventuallyT(t, 30*time.Second, "one leader", func() error {
		if bed.leader(ctx) < 0 {
			return errors.New("none yet")
		}
		return nil
	})
	checkReplicaMetrics(t, ctx, bed)

	var figures []haFigures
	first := bed.leader(ctx)
	figures = append(figures, bed.failover(t, ctx, "SIGTERM", uid, haChange{from: 1, to: 0, node: "ha-1-a", ip: "203.0.113.201"}))
	if err := bed.replicas[first].Start(ctx); err != nil {
		t.Fatalf("restarting replica %d: %v", first, err)
	}
	checkReplicaMetrics(t, ctx, bed)
	second := bed.leader(ctx)
	figures = append(figures, bed.failover(t, ctx, "SIGKILL", uid, haChange{from: 0, to: 1, node: "ha-0-b", ip: "203.0.113.202"}))
	if err := bed.replicas[second].Start(ctx); err != nil {
		t.Fatalf("restarting replica %d: %v", second, err)
	}
	var report strings.Builder
	for _, f := range figures {
		fmt.Fprintf(&report, "\n  %s of the leader: Lease taken over after %s, the node change applied on the member after %s, %d of %d API requests through the Service address failed",
			f.how, f.leaseTaken.Round(10*time.Millisecond), f.applied.Round(10*time.Millisecond), f.apiFailed, f.apiSent)
	}
	t.Logf("takeover (Lease 15s, renew 10s, retry 2s), from the signal:%s", report.String())
}

// failover stops the leader (SIGTERM: it releases the Lease; SIGKILL: the
// Lease runs out), changes a node at once, and measures when the standby
// holds the Lease and has applied the change; every 50 ms meanwhile a
// request goes through the Service address. Exactly the Peers the change
// touches are written, each once.
func (b *haBed) failover(t *testing.T, ctx context.Context, how string, uid string, change haChange) haFigures {
	t.Helper()
	old := b.leader(ctx)
	if old < 0 {
		t.Fatal("no leader")
	}
	standby := 1 - old
	holder := b.holder(ctx)
	before := map[int]map[string]unstructured.Unstructured{0: meshPeers(t, ctx, 0, uid), 1: meshPeers(t, ctx, 1, uid)}
	writes := peerWrites(t, ctx)
	stored := []*peerWatch{watchPeers(t, ctx, 0, uid), watchPeers(t, ctx, 1, uid)}
	f := haFigures{how: how}
	stopped := make(chan error, 1)
	start := time.Now()
	go func() {
		if how == "SIGKILL" {
			stopped <- b.replicas[old].Kill()
		} else {
			stopped <- b.replicas[old].Stop()
		}
	}()
	if err := env.AnnotateNode(ctx, change.from, change.node, map[string]string{kilov1alpha1.AnnotationEndpoint: change.ip + ":51820"}); err != nil {
		t.Fatal(err)
	}
	meshes := env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR)
	err := framework.Eventually(ctx, 50*time.Millisecond, time.Minute, func(ctx context.Context) error {
		f.apiSent++
		reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := meshes.List(reqCtx, metav1.ListOptions{Limit: 1}); err != nil {
			f.apiFailed++
		}
		if h := b.holder(ctx); f.leaseTaken == 0 && h != "" && h != holder {
			f.leaseTaken = time.Since(start)
		}
		if f.applied == 0 {
			for _, p := range meshPeers(t, ctx, change.to, uid) {
				if ip, _, _ := unstructured.NestedString(p.Object, "spec", "endpoint", "dnsOrIP", "ip"); ip == change.ip {
					f.applied = time.Since(start)
				}
			}
		}
		if f.leaseTaken == 0 || f.applied == 0 {
			return fmt.Errorf("%s: Lease taken over after %s, change applied after %s", how, f.leaseTaken, f.applied)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stopping replica %d: %v", old, err)
	}
	if l := b.leader(ctx); l != standby {
		t.Errorf("%s: leader %d, want the standby %d", how, l, standby)
	}
	// Late duplicates would come within a pass or two.
	time.Sleep(3 * time.Second)
	changed := 0
	for i, peers := range before {
		after := meshPeers(t, ctx, i, uid)
		if !maps.EqualFunc(peers, after, func(a, b unstructured.Unstructured) bool { return true }) {
			t.Errorf("%s: the Peers of cluster %d changed in number", how, i)
		}
		for name, p := range after {
			was := peers[name]
			if p.GetResourceVersion() != was.GetResourceVersion() {
				changed++
			}
		}
	}
	// A Peer is written when storage changes, which its watchers see. An
	// apply that changes nothing is a request, not a write: the old leader
	// may apply the change in its last moments, and the new one, before its
	// cache shows that, apply the same again.
	events := 0
	for i, w := range stored {
		for name, n := range w.stop() {
			events += n
			if n > 1 {
				t.Errorf("%s: Peer %s of cluster %d written %d times", how, name, i, n)
			}
		}
	}
	requests := peerWrites(t, ctx) - writes
	if changed != 1 || events != 1 {
		t.Errorf("%s: %d Peers changed, %d times in all (%v write requests), want one write of one Peer", how, changed, events, requests)
	}
	if requests != 1 {
		t.Logf("%s: %v Peer write requests for the one write (the others changed nothing)", how, requests)
	}
	t.Logf("%s of replica %d: Lease taken over after %s, change applied after %s, %d of %d API requests failed",
		how, old, f.leaseTaken.Round(time.Millisecond), f.applied.Round(time.Millisecond), f.apiFailed, f.apiSent)
	return f
}

// checkReplicaMetrics: only the leader has the reconciler's per-mesh
// gauges, and there the Peers desired are those managed (the alert
// KiloMeshPeersNotAsPlanned stays silent); the standby has written no Peer;
// the generic metrics the chart's dashboard uses are served.
func checkReplicaMetrics(t *testing.T, ctx context.Context, bed *haBed) {
	t.Helper()
	leader := bed.leader(ctx)
	if leader < 0 {
		t.Fatal("no leader")
	}
	used, err := framework.MonitoringMetrics()
	if err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 30*time.Second, "the leader's gauges as planned", func() error {
		raw, err := framework.Scrape(ctx, bed.replicas[leader].DirectRESTConfig(admin))
		if err != nil {
			return err
		}
		if err := peersAsPlanned(raw); err != nil {
			return err
		}
		for _, name := range used {
			if !strings.HasPrefix(name, "kilo_mesh_") {
				if _, err := framework.MetricSum(raw, name); err != nil {
					return fmt.Errorf("the dashboard's %s: %w", name, err)
				}
			}
		}
		return nil
	})
	standby := bed.replicas[1-leader]
	if !standby.Running() {
		return
	}
	raw, err := framework.Scrape(ctx, standby.DirectRESTConfig(admin))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kilo_mesh_peers_managed", "kilo_mesh_peers_desired", "kilo_mesh_peer_writes_total"} {
		if v, err := framework.MetricSum(raw, name); !errors.Is(err, framework.ErrNoSamples) {
			t.Errorf("the standby exposes %s = %v (%v)", name, v, err)
		}
	}
}
