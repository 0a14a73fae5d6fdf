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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Two replicas of the server, and what it reports: metrics and readyz. Subtests of TestReconciler.

// testTwoReplicas: two replicas have one writer.
func (c *rcTest) testTwoReplicas(t *testing.T) {
	second := c.rc.env.StartMeshServerT(t, framework.MeshServerOptions{
		ExternalEtcd: true, SkipRegistration: true,
		ExtraArgs: append(rcServerArgs(), "--etcd-prefix="+c.rc.server.EtcdPrefix),
	})
	holder := func() string {
		l, err := c.rc.kube(framework.HostCluster).CoordinationV1().Leases(reconciler.DefaultLeaseNamespace).
			Get(c.ctx, reconciler.DefaultLeaseName, metav1.GetOptions{})
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
		p, err := c.rc.peerOf(t, c.mesh, i, src, group)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.rc.dyn(i).Resource(kilov1alpha1.PeerResource).Delete(c.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "the deleted Peer back", func() error {
			q, err := c.rc.peerOf(t, c.mesh, i, src, group)
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
	if w, err := wrote(c.rc.server); err != nil || w == 0 {
		t.Errorf("the leader reports no Peer writes: %v %v", w, err)
	}
	if h := holder(); h != first {
		t.Errorf("the Lease moved from %s to %s without a failure", first, h)
	}
	if !c.rc.server.LogContains("Started leading") || second.LogContains("Started leading") {
		t.Errorf("the logs do not show the first server leading alone")
	}

	// The leader stops: the standby takes over, and writes.
	if err := c.rc.server.Stop(); err != nil {
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
	startCtx, cancel := context.WithTimeout(c.ctx, 2*time.Minute)
	defer cancel()
	if err := c.rc.server.Start(startCtx); err != nil {
		t.Fatalf("restarting the first server: %v", err)
	}
	framework.EventuallyT(t, rcConverge, "Peers as the view shows", func() error { return c.rc.allMatchView(t, c.mesh) })
}

// testMetricsReadyz: metrics and readyz.
func (c *rcTest) testMetricsReadyz(t *testing.T) {
	// The restarted server leads again once the standby let go.
	framework.EventuallyT(t, rcConverge, "the restarted server reconciling", func() error {
		m := scrape(t, c.rc.server.DirectRESTConfig(framework.UserAdmin))
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
	client, err := kubernetes.NewForConfig(c.rc.server.DirectRESTConfig(framework.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(c.ctx)
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
}
