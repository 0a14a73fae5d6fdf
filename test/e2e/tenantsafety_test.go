//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestTenantSafety attacks the real server as tenants would: with member
// API servers that stall, redirect, answer errors, huge answers, too many
// or too heavy Nodes and floods of Peers, that sit where the server may
// not go or move there, with a huge spec, with another tenant's server and
// no credentials for it, with a rotated Secret, and with meshes deleted
// behind the finalizer's back, the server running or not. Three real
// clusters with Kilo nodes (the reconciler's environment); the fake
// members are Go servers on loopback.
func TestTenantSafety(t *testing.T) {
	rc := startReconcilerEnv(t, tsServer(t))
	ts := &tsEnv{rcEnv: rc}
	var first *meshv1alpha1.ClusterMesh

	t.Run("a tenant naming another tenant's member server without its credentials claims nothing", func(t *testing.T) {
		// The squatter comes first, naming cluster 1's server with a token
		// that does not authenticate, and claims the networks the victim's
		// mesh will declare for cluster 2, on the local cluster both use.
		ns := ts.namespace(t, "squatter")
		kc, err := rc.env.KubeconfigFor(1, "squatter", "not-a-valid-token")
		if err != nil {
			t.Fatal(err)
		}
		ts.putSecret(t, ns, "stolen", kc)
		ts.create(t, ns, ts.meshYAML("squatter", "10.110", "10.140", entryYAML("victim", "stolen", "10.12.0.0/16", "10.42.0.0/16")))
		framework.EventuallyT(t, rcConverge, "the squatter's entry unauthorized", func() error {
			return clusterError(ts.get(t, ns, "squatter"), "victim", "Unauthorized")
		})

		first = rc.createMesh(t, "first")
		framework.EventuallyT(t, rcConverge, "the victim's mesh Ready", func() error {
			return wantCondition(rc.mesh(t, "first"), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady)
		})
		framework.EventuallyT(t, rcConverge, "the victim's Peers as its view shows", func() error { return rc.allMatchView(t, first) })
		m := rc.mesh(t, "first")
		if err := wantCondition(m, meshv1alpha1.ConditionNetworksValid, metav1.ConditionTrue, ""); err != nil {
			t.Error(err)
		}
		if plan := ts.plan(t, rc.ns, "first"); strings.Contains(plan, planner.ConflictCIDRClaimedByOtherMesh) {
			t.Errorf("the squatter's claim reached the victim's plan:\n%s", plan)
		}
	})
	if first == nil {
		t.Fatal("no mesh to attack the others with")
	}

	t.Run("a member that stalls Node lists and watches takes nothing else down", func(t *testing.T) {
		fm, ns := ts.fakeMemberMesh(t, framework.FakeMemberStall, "stalled", "10.111", "10.141")
		framework.EventuallyT(t, rcConverge, "the fake member listed", func() error {
			if fm.Stalled() == 0 {
				return errors.New("no list or watch reached the fake member yet")
			}
			return nil
		})
		// A restart with the stalled member: readiness, the APIService and
		// the other meshes must not wait for it (its lists time out after
		// a minute; everything below is asked of the first 30 s).
		if err := rc.server.Stop(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rc.server.Start(ctx); err != nil {
			t.Fatalf("restart with a stalled member: %v", err)
		}
		t.Logf("ready and Available %s after the restart", time.Since(start).Round(time.Millisecond))
		node := framework.KiloNode{Name: "c1-c1", Location: "c", Endpoint: "203.0.113.19:51820", InternalIP: "192.168.1.19/24", PodCIDR: "10.11.9.0/24"}
		if _, err := rc.env.CreateKiloNode(context.Background(), 1, node); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "the other mesh applies a new node", func() error {
			if _, err := rc.peerOf(t, first, 0, 1, "location:c"); err != nil {
				return err
			}
			return rc.allMatchView(t, first)
		})
		t.Logf("another tenant's new node applied %s after the restart", time.Since(start).Round(time.Millisecond))
		if time.Since(start) > time.Minute {
			t.Errorf("the other mesh waited %s, as long as the stalled member's lists", time.Since(start))
		}
		raw, err := rc.kube(framework.HostCluster).Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err != nil {
			t.Errorf("the host's /readyz: %v %s", err, raw)
		}
		direct, err := kubernetes.NewForConfig(rc.server.DirectRESTConfig(framework.UserAdmin))
		if err != nil {
			t.Fatal(err)
		}
		if raw, err := direct.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background()); err != nil {
			t.Errorf("the server's /readyz with a stalled member: %v %s", err, raw)
		}
		if err := rc.server.WaitAvailable(ctx); err != nil {
			t.Errorf("APIService: %v", err)
		}
		ts.delete(t, ns, "stalled")
	})

	t.Run("a member that answers with redirects never sends the server elsewhere", func(t *testing.T) {
		fm, ns := ts.fakeMemberMesh(t, framework.FakeMemberRedirect, "redirected", "10.115", "10.145")
		framework.EventuallyT(t, rcConverge, "the redirect reported", func() error {
			return clusterError(ts.get(t, ns, "redirected"), "far", "redirect")
		})
		if fm.Requests() == 0 {
			t.Fatal("the fake member saw no request: the test proves nothing")
		}
		time.Sleep(2 * time.Second)
		if n := fm.RedirectTarget.Connections(); n != 0 {
			t.Errorf("the redirect target got %d connections", n)
		}
		ts.delete(t, ns, "redirected")
	})

	t.Run("what a member answers never reaches users", func(t *testing.T) {
		fm, ns := ts.fakeMemberMesh(t, framework.FakeMemberError, "failing", "10.117", "10.147")
		framework.EventuallyT(t, rcConverge, "the error reported", func() error {
			return clusterError(ts.get(t, ns, "failing"), "far", "HTTP 500")
		})
		marker := fm.ErrorBody[:strings.Index(fm.ErrorBody, " ")]
		seen := map[string]string{
			"the mesh":         toJSON(t, ts.get(t, ns, "failing")),
			"the plan":         ts.plan(t, ns, "failing"),
			"the events":       toJSON(t, ts.events(t, ns)),
			"the table":        rc.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", ns, "get", "cmesh", "failing", "-o", "wide"),
			"kubectl describe": rc.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", ns, "describe", "cmesh", "failing"),
			"the server's log": rc.server.Logs(),
		}
		for where, text := range seen {
			if strings.Contains(text, marker) || strings.Contains(text, "aws_secret_access_key") {
				t.Errorf("%s shows the member's answer:\n%s", where, text)
			}
		}
		for _, cs := range ts.get(t, ns, "failing").Status.Clusters {
			if len(cs.LastError) > 400 {
				t.Errorf("lastError of %s is %d bytes", cs.Name, len(cs.LastError))
			}
		}
		ts.delete(t, ns, "failing")
	})

	t.Run("a member over --max-member-nodes is not used, and nobody waits for it", ts.testNodeCount(first))
	t.Run("an answer of 100 MiB is read no further than 64 MiB", ts.testHugeAnswer(first))
	t.Run("heavy Nodes and a flood of Peers cannot exhaust the server's memory", ts.testMemory(first))
	t.Run("many heavy members of one namespace get its share of the memory, not the server's", ts.testNamespaceBudget(first))
	t.Run("a tenant's load on admission gets 429s, and another tenant's creates succeed", ts.testAdmissionLoad)
	t.Run("a member that streams but stops answering its probe is unreachable at the third probe", ts.testStreamingMember)

	t.Run("a loopback address outside the allowed set is never dialled", func(t *testing.T) {
		// The server may dial 127.0.0.0/8 (the test clusters); ::1 is
		// loopback too, and outside.
		cc, err := framework.NewConnCounterOn("[::1]:0")
		if err != nil {
			t.Fatalf("this attack needs the IPv6 loopback address ::1 (enable IPv6 on lo): %v", err)
		}
		defer cc.Close()
		kc, err := clientcmd.Load(rc.env.KubeconfigBytes(1, framework.UserAdmin))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range kc.Clusters {
			c.Server = "https://" + cc.Addr
		}
		v6, err := clientcmd.Write(*kc)
		if err != nil {
			t.Fatal(err)
		}
		ns := ts.namespace(t, "loopback")
		ts.putSecret(t, ns, "v6", v6)
		err = ts.tryCreate(t, ns, ts.meshYAML("refused", "10.119", "10.149", entryYAML("far", "v6", "10.120.0.0/16", "10.150.0.0/16")))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clusters[1].kubeconfigSecretRef") || !strings.Contains(err.Error(), "::1") {
			t.Fatalf("want a 422 on spec.clusters[1].kubeconfigSecretRef, got %v", err)
		}
		// A Secret written after its mesh was admitted is refused by the
		// member caches, before any connection.
		ts.create(t, ns, ts.meshYAML("later", "10.119", "10.149", entryYAML("far", "later", "10.120.0.0/16", "10.150.0.0/16")))
		ts.putSecret(t, ns, "later", v6)
		framework.EventuallyT(t, rcConverge, "refused by the member caches", func() error {
			return clusterError(ts.get(t, ns, "later"), "far", "ServerNotAllowed")
		})
		if n := cc.Connections(); n != 0 {
			t.Errorf("the address outside the allowed set got %d connections", n)
		}
		// An administrator's grant may allow it for the namespace (its
		// memberServers add to the flag's networks): then it is dialled.
		grant := "e2e-" + ns
		if err := rc.env.ApplyGrant(context.Background(), grant, meshv1alpha1.ClusterMeshGrantSpec{
			Namespaces: []string{ns}, MemberServers: []string{"::1/128"},
		}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rc.env.DeleteGrant(context.Background(), grant) }()
		framework.EventuallyT(t, rcConverge, "the server a grant allows is dialled", func() error {
			if cc.Connections() == 0 {
				return errors.New("no connection yet")
			}
			return nil
		})
		ts.delete(t, ns, "later")
	})

	t.Run("a name that moves to a forbidden address is never dialled there", ts.testRebinding)

	t.Run("a spec of 40,000 networks is refused at once", func(t *testing.T) {
		var cidrs []string
		for i := range 40000 {
			cidrs = append(cidrs, fmt.Sprintf("%d.%d.%d.0/24", 11+i/65536, i/256%256, i%256))
		}
		list, _ := json.Marshal(cidrs)
		ns := ts.namespace(t, "huge")
		start := time.Now()
		err := ts.tryCreate(t, ns, ts.meshYAML("huge", "10.121", "10.151",
			"  - name: far\n    kubeconfigSecretRef: {name: any}\n    podCIDRs: [\"10.122.0.0/16\"]\n    wireguardCIDR: 10.152.0.0/16\n    additionalCIDRs: "+string(list)+"\n"))
		took := time.Since(start)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clusters[1].additionalCIDRs") {
			t.Fatalf("want a 422 on spec.clusters[1].additionalCIDRs, got %v", err)
		}
		t.Logf("refused in %s (request of %d kB)", took.Round(time.Millisecond), len(list)/1000)
	})

	t.Run("a rotated Secret: the later mesh loses what the earlier one claims", func(t *testing.T) {
		// A node of cluster 2 whose pod network lies in first's network of
		// cluster 1; first itself skips it (outside what it declares there).
		node := framework.KiloNode{Name: "c2-x1", Location: "x", Endpoint: "203.0.113.29:51820", InternalIP: "192.168.2.29/24",
			PodCIDR: "10.11.200.0/24", WireGuardIP: "10.144.0.9/16"}
		if _, err := rc.env.CreateKiloNode(context.Background(), 2, node); err != nil {
			t.Fatal(err)
		}
		ns := ts.namespace(t, "late")
		ts.putSecret(t, ns, "mine", rc.env.KubeconfigBytes(1, framework.UserAdmin))
		// Creation times have seconds only, and within one second the UID
		// decides which mesh came first: be a second later for sure.
		time.Sleep(time.Until(first.CreationTimestamp.Add(1100 * time.Millisecond)))
		// Its local entry is first's local cluster, declared alike; its
		// other entry is cluster 1, for now, where first declares 10.11.0.0/16.
		late := `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: late
spec:
  clusters:
  - name: home
    local: true
    podCIDRs: ["10.10.0.0/16"]
    serviceCIDR: 10.96.0.0/16
    wireguardCIDR: 10.40.0.0/16
` + entryYAML("mine", "mine", "10.11.200.0/24", "10.144.0.0/16")
		ts.create(t, ns, late)
		framework.EventuallyT(t, rcConverge, "late planned", func() error {
			return wantCondition(ts.get(t, ns, "late"), meshv1alpha1.ConditionClustersReachable, metav1.ConditionTrue, "")
		})
		if plan := ts.plan(t, ns, "late"); strings.Contains(plan, planner.ConflictCIDRClaimedByOtherMesh) {
			t.Fatalf("before the rotation, late's plan has a %s conflict:\n%s", planner.ConflictCIDRClaimedByOtherMesh, plan)
		}
		// The Secret now points at cluster 2: the same network is another
		// cluster's than first's, on the local cluster both use.
		ts.putSecret(t, ns, "mine", rc.env.KubeconfigBytes(2, framework.UserAdmin))
		framework.EventuallyT(t, rcConverge, "late's networks invalid", func() error {
			return wantCondition(ts.get(t, ns, "late"), meshv1alpha1.ConditionNetworksValid, metav1.ConditionFalse, reconciler.ReasonNetworkConflicts)
		})
		plan := ts.plan(t, ns, "late")
		if !strings.Contains(plan, planner.ConflictCIDRClaimedByOtherMesh) {
			t.Errorf("late's plan has no %s conflict:\n%s", planner.ConflictCIDRClaimedByOtherMesh, plan)
		}
		for _, secret := range []string{rc.ns, "first"} {
			if strings.Contains(plan, secret) {
				t.Errorf("late's plan names %q of the other tenant", secret)
			}
		}
		// What late applies on cluster 0 for the node: its WireGuard IP
		// (in late's 10.144.0.0/16), not the pod network first claims.
		lateMesh := ts.get(t, ns, "late")
		name := planner.PeerName(ns, "late", "mine", "location:x")
		framework.EventuallyT(t, rcConverge, "late's Peer for the node applied without first's network", func() error {
			peers, err := rc.peers(t, 0, lateMesh.UID)
			if err != nil {
				return err
			}
			p := peers[name]
			if p == nil {
				return fmt.Errorf("no Peer %s on cluster 0 (has %v)", name, slices.Sorted(maps.Keys(peers)))
			}
			if len(p.Spec.AllowedIPs) == 0 || slices.Contains(p.Spec.AllowedIPs, "10.11.200.0/24") {
				return fmt.Errorf("Peer %s carries %v, want its WireGuard IP alone", name, p.Spec.AllowedIPs)
			}
			claimed := netip.MustParsePrefix("10.11.0.0/16")
			for _, p := range peers {
				for _, ip := range p.Spec.AllowedIPs {
					if q, err := netip.ParsePrefix(ip); err == nil && q.Overlaps(claimed) {
						return fmt.Errorf("Peer %s carries %s", p.Name, ip)
					}
				}
			}
			return nil
		})
		if err := wantCondition(rc.mesh(t, "first"), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady); err != nil {
			t.Errorf("the earlier mesh: %v", err)
		}
		if err := rc.allMatchView(t, first); err != nil {
			t.Errorf("the earlier mesh's Peers: %v", err)
		}
		// The later mesh's claim overlaps the earlier mesh's network of
		// cluster 1, on clusters both use: the earlier mesh claimed it
		// first, so its updates are not refused for it.
		patch := `[{"op":"add","path":"/spec/clusters/1/persistentKeepalive","value":25}]`
		if _, stderr, err := rc.env.Kubectl(context.Background(), framework.HostCluster, framework.UserAdmin, "-n", rc.ns, "patch", "clustermesh", "first", "--type=json", "-p", patch); err != nil {
			t.Errorf("the earlier mesh's update was refused for the later mesh's claim: %v\n%s", err, stderr)
		} else {
			undo := `[{"op":"remove","path":"/spec/clusters/1/persistentKeepalive"}]`
			if _, stderr, err := rc.env.Kubectl(context.Background(), framework.HostCluster, framework.UserAdmin, "-n", rc.ns, "patch", "clustermesh", "first", "--type=json", "-p", undo); err != nil {
				t.Errorf("undoing the update: %v\n%s", err, stderr)
			}
		}
		ts.delete(t, ns, "late")
	})

	t.Run("a grant bounds the count and bytes of a mesh's Peers on the host", ts.testHostPeerLimits)
	t.Run("what members write is bounded and escaped, and their endpoints judged, before it reaches the host", ts.testMemberStrings)
	t.Run("a kubeconfig borrowing the host's identity claims nothing and blocks nobody", ts.testBorrowedIdentity(first))

	t.Run("a mesh deleted while the server was stopped leaves no Peer", ts.testDeletedWhileStopped)

	t.Run("a mesh deleted after its finalizer was removed leaves no Peer", ts.testDeletedWithoutFinalizer(first))
}
