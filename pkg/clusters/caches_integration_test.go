//go:build integration

package clusters

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

func (h *harness) testNodesPeersAndChanges(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	h.putSecret(t, ns, "member-2", h.kubeconfig(member2, framework.UserAdmin))
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("one", "member-1"), remoteEntry("two", "member-2"))
	m, changes := h.startManager(t)
	m.Follow(mesh)
	took := framework.EventuallyT(t, 30*time.Second, "all clusters usable", allUsable(m, mesh))
	t.Logf("three clusters synced %s after Follow", took.Round(time.Millisecond))
	framework.EventuallyT(t, 5*time.Second, "change reported after sync", changes.seen(meshKey(mesh)))
	if !m.Settled(mesh) {
		t.Error("Settled is false with every cluster synced")
	}

	// A Node created on member 1 appears there, and only there.
	node := h.createNode(t, member1, "n1")
	took = framework.EventuallyT(t, 10*time.Second, "node in the cache", func() error {
		if !hasNode(m.Snapshot(mesh)["one"], node) {
			return errors.New("not yet")
		}
		return nil
	})
	t.Logf("node visible %s after creation", took.Round(time.Millisecond))
	snap := m.Snapshot(mesh)
	if hasNode(snap["two"], node) || hasNode(snap["host"], node) {
		t.Error("node of member 1 shows up in another cluster")
	}
	for _, n := range snap["one"].Nodes.All() {
		if n.Name != node {
			continue
		}
		if len(n.ManagedFields) > 0 || n.Status.NodeInfo.KubeletVersion != "" || len(n.Status.Conditions) != 0 {
			t.Errorf("cached node was not slimmed: %+v", n)
		}
		if n.Annotations[kilov1alpha1.AnnotationKey] == "" || n.Spec.PodCIDR == "" || len(n.Status.Addresses) == 0 || n.UID == "" {
			t.Errorf("cached node lost what the planner needs: %+v", n)
		}
	}

	// A Node change triggers the change handler.
	changes.reset()
	start := time.Now()
	if err := h.env.AnnotateNode(h.ctx, member1, node, map[string]string{kilov1alpha1.AnnotationLocation: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 5*time.Second, "change reported for a node annotation", changes.seen(meshKey(mesh)))
	t.Logf("node change reported %s after the update", time.Since(start).Round(time.Millisecond))
	framework.EventuallyT(t, 5*time.Second, "annotation in the cache", func() error {
		for _, n := range m.Snapshot(mesh)["one"].Nodes.All() {
			if n.Name == node && n.Annotations[kilov1alpha1.AnnotationLocation] == "elsewhere" {
				return nil
			}
		}
		return errors.New("not yet")
	})

	// Peers: written through PeerClient, read from the cache as typed objects.
	pc, err := m.Members(mesh)["two"].Peers()
	if err != nil {
		t.Fatal(err)
	}
	_, pub, err := framework.NewWireGuardKey()
	if err != nil {
		t.Fatal(err)
	}
	peerName := framework.UniqueName("peer")
	peer := &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{Name: peerName, Labels: map[string]string{"test": "clusters"}},
		Spec: kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.10.0.0/24"}, PublicKey: pub,
			Endpoint: &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.1"}, Port: 51820}},
	}
	changes.reset()
	applied, err := pc.Apply(h.ctx, peer, metav1.ApplyOptions{FieldManager: "clusters-test"})
	if err != nil {
		t.Fatal(err)
	}
	created, err := applied.Live()
	if err != nil {
		t.Fatal(err)
	}
	// What a pass reads of the answer is what the whole answer says.
	if applied.ResourceVersion == "" || applied.ResourceVersion != created.ResourceVersion || !applied.Endpoint || applied.Keepalive {
		t.Errorf("the apply's answer read as resourceVersion %q, endpoint %v, keepalive %v; the whole answer says %q, an endpoint, no keepalive",
			applied.ResourceVersion, applied.Endpoint, applied.Keepalive, created.ResourceVersion)
	}
	framework.EventuallyT(t, 5*time.Second, "change reported for a new peer", changes.seen(meshKey(mesh)))
	framework.EventuallyT(t, 5*time.Second, "peer in the cache", func() error {
		p := hasPeer(m.Snapshot(mesh)["two"], peerName)
		if p == nil || p.UID != created.UID || p.Labels["test"] != "clusters" || p.Spec.Endpoint == nil || p.Spec.PublicKey != pub {
			return fmt.Errorf("got %+v", p)
		}
		return nil
	})
	created.Spec.AllowedIPs = []string{"10.10.0.0/24", "10.11.0.0/24"}
	if _, err := pc.Update(h.ctx, created, metav1.UpdateOptions{FieldManager: "clusters-test"}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 5*time.Second, "updated peer in the cache", func() error {
		if p := hasPeer(m.Snapshot(mesh)["two"], peerName); p == nil || len(p.Spec.AllowedIPs) != 2 {
			return fmt.Errorf("got %+v", p)
		}
		return nil
	})
	if err := pc.Delete(h.ctx, peerName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 5*time.Second, "deleted peer gone from the cache", func() error {
		if hasPeer(m.Snapshot(mesh)["two"], peerName) != nil {
			return errors.New("still there")
		}
		return nil
	})
	if _, err := m.Members(mesh)["nope"].Peers(); !errors.Is(err, memberaccess.ErrUnknownCluster) {
		t.Errorf("PeerClient of an unknown cluster: %v", err)
	}
}

func (h *harness) testSharedCaches(t *testing.T) {
	nsA, nsB := h.namespace(t), h.namespace(t)
	// Same content under two names in two namespaces: one cache.
	h.putSecret(t, nsA, "a-member", h.kubeconfig(member1, framework.UserAdmin))
	h.putSecret(t, nsB, "b-member", h.kubeconfig(member1, framework.UserAdmin))
	meshA := newMesh(nsA, "a", localEntry("host"), remoteEntry("member", "a-member"))
	meshB := newMesh(nsB, "b", localEntry("host"), remoteEntry("member", "b-member"))
	m, _ := h.startManager(t)
	m.Follow(meshA)
	m.Follow(meshB)
	m.Follow(meshA) // idempotent
	framework.EventuallyT(t, 30*time.Second, "mesh a usable", allUsable(m, meshA))
	framework.EventuallyT(t, 30*time.Second, "mesh b usable", allUsable(m, meshB))
	wantStats := func(want Stats) func() error {
		return func() error {
			if got := m.stats(); got != want {
				return fmt.Errorf("stats %+v, want %+v", got, want)
			}
			return nil
		}
	}
	// local + member 1, each with a Node and a Peer informer; two Secrets.
	framework.EventuallyT(t, 5*time.Second, "shared caches", wantStats(Stats{Clusters: 2, Informers: 4, SecretWatches: 2}))

	// Other credentials for the same cluster never share a cache.
	h.putSecret(t, nsA, "c-member", h.kubeconfig(member1, userReader))
	meshC := newMesh(nsA, "c", localEntry("host"), remoteEntry("member", "c-member"))
	m.Follow(meshC)
	framework.EventuallyT(t, 30*time.Second, "mesh c usable", allUsable(m, meshC))
	framework.EventuallyT(t, 5*time.Second, "separate cache for other credentials", wantStats(Stats{Clusters: 3, Informers: 6, SecretWatches: 3}))

	m.Forget(meshC)
	framework.EventuallyT(t, 5*time.Second, "cache of c stopped", wantStats(Stats{Clusters: 2, Informers: 4, SecretWatches: 2}))
	m.Forget(meshA)
	framework.EventuallyT(t, 5*time.Second, "caches kept for b", wantStats(Stats{Clusters: 2, Informers: 4, SecretWatches: 1}))
	if err := allUsable(m, meshB)(); err != nil {
		t.Errorf("mesh b after a was forgotten: %v", err)
	}
	m.Forget(meshB)
	framework.EventuallyT(t, 5*time.Second, "everything stopped", wantStats(Stats{}))
	if st := m.Snapshot(meshB)["member"]; st.Reason != memberaccess.ErrPending {
		t.Errorf("forgotten mesh: %+v, want Pending", st)
	}
}
