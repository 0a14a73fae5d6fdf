//go:build integration

package clusters

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

func (h *harness) testNoPeerCRD(t *testing.T) {
	ns := h.namespace(t)
	m, changes, mesh := h.followMember(t, ns, "crd", member2)
	informers := m.stats().Informers

	crds := h.env.Dynamic(member2, framework.UserAdmin).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	changes.reset()
	start := time.Now()
	if err := crds.Delete(h.ctx, framework.PeerCRDName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 30*time.Second, "missing Peer CRD reported", func() error {
		st := m.Snapshot(mesh)["member"]
		if st.PeerCRD || !st.Synced || !st.Reachable || st.Peers.Len() != 0 || st.Reason != "" {
			return fmt.Errorf("peerCRD=%v synced=%v reachable=%v peers=%d reason=%q err=%q", st.PeerCRD, st.Synced, st.Reachable, st.Peers.Len(), st.Reason, st.LastError)
		}
		return nil
	})
	t.Logf("Peer CRD removal seen %s after the delete call", time.Since(start).Round(time.Millisecond))
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))
	framework.EventuallyT(t, 5*time.Second, "Peer informer stopped", func() error {
		if got := m.stats().Informers; got != informers-1 {
			return fmt.Errorf("%d informers, want %d", got, informers-1)
		}
		return nil
	})
	if _, err := m.Members(mesh)["member"].Peers(); !errors.Is(err, memberaccess.ErrPeerCRDMissing) {
		t.Errorf("PeerClient without the CRD: %v", err)
	}
	if !m.Settled(mesh) {
		t.Error("a cluster without the Peer CRD holds readiness")
	}

	// Installing it again brings the Peer informer back.
	path, err := h.env.PeerCRDPath()
	if err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 60*time.Second, "Peer CRD re-created", func() error {
		// The old CRD may still be finishing its deletion.
		if _, _, err := h.env.Kubectl(h.ctx, member2, framework.UserAdmin, "apply", "-f", path); err != nil {
			return err
		}
		return nil
	})
	if err := h.env.WaitCRDEstablished(h.ctx, member2, framework.PeerCRDName); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 30*time.Second, "Peer CRD seen again", allUsable(m, mesh))
	framework.EventuallyT(t, 5*time.Second, "Peer informer running", func() error {
		if got := m.stats().Informers; got != informers {
			return fmt.Errorf("%d informers, want %d", got, informers)
		}
		return nil
	})
}

func (h *harness) testStoppedCluster(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	h.putSecret(t, ns, "member-2", h.kubeconfig(member2, framework.UserAdmin))
	mesh := newMesh(ns, "down", localEntry("host"), remoteEntry("one", "member-1"), remoteEntry("two", "member-2"))
	m, changes := h.startManager(t)
	m.Follow(mesh)
	before := h.createNode(t, member2, "before-stop")
	framework.EventuallyT(t, 30*time.Second, "usable", allUsable(m, mesh))
	framework.EventuallyT(t, 10*time.Second, "node in the cache", func() error {
		if !hasNode(m.Snapshot(mesh)["two"], before) {
			return errors.New("not yet")
		}
		return nil
	})
	oneNodes := m.Snapshot(mesh)["one"].Nodes.Len()

	changes.reset()
	// StopCluster sends SIGTERM and waits for the exit (SIGKILL after 5s):
	// measure from the signal, not from its return.
	start := time.Now()
	var stopErr error
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		stopErr = h.env.StopCluster(member2)
	}()
	defer func() {
		// Leave the cluster running for the next tests, whatever happened.
		<-stopped
		if !h.env.ClusterRunning(member2) {
			if err := h.env.StartCluster(h.ctx, member2); err != nil {
				t.Errorf("restarting cluster %d: %v", member2, err)
			}
		}
	}()
	var slowest time.Duration
	took := framework.EventuallyT(t, 20*time.Second, "unreachable", func() error {
		t0 := time.Now()
		snap := m.Snapshot(mesh)
		slowest = max(slowest, time.Since(t0))
		if snap["two"].Reachable {
			return errors.New("still reachable")
		}
		return nil
	})
	<-stopped
	if stopErr != nil {
		t.Fatal(stopErr)
	}
	t.Logf("unreachable seen %s after SIGTERM to kube-apiserver (it exited after %s): %s", took.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond), m.Snapshot(mesh)["two"].LastError)
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))

	// While it is down: the other clusters are served, the last known
	// objects of the stopped one are kept, and Snapshot stays fast.
	for range 20 {
		t0 := time.Now()
		snap := m.Snapshot(mesh)
		slowest = max(slowest, time.Since(t0))
		if err := usable(snap["one"]); err != nil || snap["one"].Nodes.Len() != oneNodes {
			t.Errorf("member 1 while member 2 is down: %v nodes=%d", err, snap["one"].Nodes.Len())
		}
		two := snap["two"]
		if two.Reachable || two.Reason != memberaccess.ErrUnreachable || two.LastError == "" || !two.Synced || !hasNode(two, before) {
			t.Errorf("member 2 while down: reachable=%v reason=%q err=%q synced=%v kept node=%v",
				two.Reachable, two.Reason, two.LastError, two.Synced, hasNode(two, before))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("slowest Snapshot while a member was down: %s", slowest)
	if slowest > 100*time.Millisecond {
		t.Errorf("Snapshot took %s with a member down", slowest)
	}
	if !m.Settled(mesh) {
		t.Error("an unreachable cluster holds readiness")
	}
	if _, err := m.Members(mesh)["two"].Peers(); err != nil {
		t.Errorf("PeerClient of an unreachable cluster: %v (writes should fail on their own)", err)
	}

	h.restartAndCheck(t, m, mesh, member2, "two")

	// A crash (SIGKILL) breaks the watches at once: the informers' failed
	// calls trigger the probe, no need to wait for its tick.
	pid := h.env.ClusterPid(member2)
	if !h.env.ClusterRunning(member2) || pid == 0 {
		t.Fatalf("kube-apiserver of cluster %d is not running (pid %d)", member2, pid)
	}
	changes.reset()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	took = framework.EventuallyT(t, 20*time.Second, "unreachable after a crash", func() error {
		if m.Snapshot(mesh)["two"].Reachable {
			return errors.New("still reachable")
		}
		return nil
	})
	t.Logf("unreachable seen %s after SIGKILL to kube-apiserver: %s", took.Round(time.Millisecond), m.Snapshot(mesh)["two"].LastError)
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))
	framework.EventuallyT(t, 10*time.Second, "process gone", func() error {
		if h.env.ClusterRunning(member2) {
			return errors.New("still running")
		}
		return nil
	})
	h.restartAndCheck(t, m, mesh, member2, "two")
}

// restartAndCheck starts a stopped cluster and checks that the mesh's
// entry becomes usable again and follows new objects.
func (h *harness) restartAndCheck(t *testing.T, m *Manager, mesh *meshv1alpha1.ClusterMesh, cluster int, entry string) {
	t.Helper()
	start := time.Now()
	if err := h.env.StartCluster(h.ctx, cluster); err != nil {
		t.Fatal(err)
	}
	ready := time.Since(start)
	took := framework.EventuallyT(t, 20*time.Second, "reachable again", func() error {
		return usable(m.Snapshot(mesh)[entry])
	})
	t.Logf("kube-apiserver ready %s after start; reachable again %s after that", ready.Round(time.Millisecond), took.Round(time.Millisecond))

	// The caches follow the cluster again at once, not after the informer's backoff.
	start = time.Now()
	after := h.createNode(t, cluster, "after-restart")
	framework.EventuallyT(t, 10*time.Second, "new node after restart", func() error {
		if !hasNode(m.Snapshot(mesh)[entry], after) {
			return errors.New("not yet")
		}
		return nil
	})
	t.Logf("node created after the restart visible %s after creation", time.Since(start).Round(time.Millisecond))
}

// testFrozenCluster stops kube-apiserver with SIGSTOP: connections stay
// open and nothing answers, as with a network partition, so only the probe
// can notice.
func (h *harness) testFrozenCluster(t *testing.T) {
	pid := h.env.ClusterPid(member1)
	if !h.env.ClusterRunning(member1) || pid == 0 {
		t.Fatalf("kube-apiserver of cluster %d is not running (pid %d): an earlier test failed to restart it", member1, pid)
	}
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	mesh := newMesh(ns, "frozen", localEntry("host"), remoteEntry("one", "member-1"))
	m, _ := h.startManager(t, func(c *Config) { c.ProbeInterval = DefaultProbeInterval })
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "usable", allUsable(m, mesh))

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	took := framework.EventuallyT(t, DefaultProbeInterval+DefaultProbeTimeout+5*time.Second, "frozen server unreachable", func() error {
		if m.Snapshot(mesh)["one"].Reachable {
			return errors.New("still reachable")
		}
		return nil
	})
	t.Logf("frozen kube-apiserver seen unreachable after %s (probe interval %s, timeout %s): %s", took.Round(time.Millisecond),
		DefaultProbeInterval, DefaultProbeTimeout, m.Snapshot(mesh)["one"].LastError)
	if err := usable(m.Snapshot(mesh)["host"]); err != nil {
		t.Errorf("host cluster while member 1 is frozen: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	took = framework.EventuallyT(t, DefaultProbeInterval+DefaultProbeTimeout+5*time.Second, "thawed server reachable", allUsable(m, mesh))
	t.Logf("thawed kube-apiserver reachable again after %s", took.Round(time.Millisecond))
}
