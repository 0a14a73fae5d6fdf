//go:build e2e

package e2e

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Managed Peers changed behind the reconciler's back come back; with
// nothing to change, nothing is written. Subtests of TestReconciler.

// testDeletedPeerReturns: a deleted managed Peer returns.
func (c *rcTest) testDeletedPeerReturns(t *testing.T) {
	p, err := c.rc.peerOf(t, c.mesh, 2, 0, "location:b")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.rc.dyn(2).Resource(kilov1alpha1.PeerResource).Delete(c.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took := framework.EventuallyT(t, rcConverge, "the Peer recreated", func() error {
		q, err := c.rc.peerOf(t, c.mesh, 2, 0, "location:b")
		if err != nil {
			return err
		}
		if q.UID == p.UID {
			return errors.New("not deleted yet")
		}
		return nil
	})
	t.Logf("deleted Peer back after %s", took.Round(time.Millisecond))
	if err := c.rc.matchesView(t, c.mesh, 2); err != nil {
		t.Error(err)
	}
}

// testEditedPeerRestored: an edited managed Peer is restored.
func (c *rcTest) testEditedPeerRestored(t *testing.T) {
	p, err := c.rc.peerOf(t, c.mesh, 1, 2, "location:a")
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"spec":{"allowedIPs":["10.250.0.0/24"],"persistentKeepalive":7}}`)
	if _, err := c.rc.dyn(1).Resource(kilov1alpha1.PeerResource).Patch(c.ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, rcConverge, "the Peer restored", func() error { return c.rc.matchesView(t, c.mesh, 1) })
}

// testSteadyState: steady state writes nothing.
func (c *rcTest) testSteadyState(t *testing.T) {
	framework.EventuallyT(t, rcConverge, "Ready", func() error {
		return wantCondition(c.rc.mesh(t, c.name), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady)
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
			peers += writes(c.rc.env.RESTConfig(i, framework.UserAdmin), kilov1alpha1.GroupName, "peers")
		}
		meshes = writes(c.rc.server.DirectRESTConfig(framework.UserAdmin), meshv1alpha1.GroupName, "clustermeshes")
		leases = writes(c.rc.env.RESTConfig(framework.HostCluster, framework.UserAdmin), "coordination.k8s.io", "leases")
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
}
