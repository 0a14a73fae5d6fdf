//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// grantedTenant is a fresh namespace where the tenant user has edit only,
// covered by a grant of the test networks (changed by spec), with a Secret
// "fake" holding fm's kubeconfig. The grant goes with the test.
func (ts *tsEnv) grantedTenant(t *testing.T, prefix string, fm *framework.FakeMember, spec func(*meshv1alpha1.ClusterMeshGrantSpec)) string {
	t.Helper()
	ctx := context.Background()
	ns := ts.namespace(t, prefix)
	if err := ts.env.GrantNamespaceRole(ctx, framework.HostCluster, ns, framework.UserTenantA, "edit"); err != nil {
		t.Fatal(err)
	}
	kc, err := fm.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	ts.putSecret(t, ns, "fake", kc)
	ts.applyGrant(t, ns, spec)
	t.Cleanup(func() { _ = ts.env.DeleteGrant(context.Background(), ns) })
	return ns
}

// applyGrant writes the grant named after ns, covering ns.
func (ts *tsEnv) applyGrant(t *testing.T, ns string, spec func(*meshv1alpha1.ClusterMeshGrantSpec)) {
	t.Helper()
	g := framework.TenantGrant(ns)
	spec(&g)
	if err := ts.env.ApplyGrant(context.Background(), ns, g); err != nil {
		t.Fatal(err)
	}
}

// createAsTenant creates mesh name as the tenant user, with kubectl.
func (ts *tsEnv) createAsTenant(t *testing.T, ns, name, manifest string) *meshv1alpha1.ClusterMesh {
	t.Helper()
	if _, stderr, err := ts.env.KubectlWithInput(context.Background(), strings.NewReader(manifest), framework.HostCluster, framework.UserTenantA, "-n", ns, "create", "-f", "-"); err != nil {
		t.Fatalf("creating a mesh as %s: %v\n%s", framework.UserTenantA, err, stderr)
	}
	return ts.get(t, ns, name)
}

// typedPlan is the plan view of a mesh, decoded.
func (ts *tsEnv) typedPlan(t *testing.T, ns, name string) *meshv1alpha1.ClusterMeshPlan {
	t.Helper()
	p := &meshv1alpha1.ClusterMeshPlan{}
	if err := json.Unmarshal([]byte(ts.plan(t, ns, name)), p); err != nil {
		t.Fatalf("decoding the plan of %s/%s: %v", ns, name, err)
	}
	return p
}

func hasIssue(issues []meshv1alpha1.PlanIssue, reason string) bool {
	return slices.ContainsFunc(issues, func(i meshv1alpha1.PlanIssue) bool { return i.Reason == reason })
}

// testHostPeerLimits: a member with 60 nodes (a /28 each, inside the
// granted networks) would put 60 Peers on the host; the grant allows 20,
// then 8 KiB. The host never holds more, and the plan says why.
func (ts *tsEnv) testHostPeerLimits(t *testing.T) {
	fm := ts.servingMember(t, framework.FakeContent{Nodes: 60, PodCIDRPerNode: true})
	ns := ts.grantedTenant(t, "bounded", fm, func(g *meshv1alpha1.ClusterMeshGrantSpec) { g.MaxHostPeers = ptr.To[int32](20) })
	mesh := ts.createAsTenant(t, ns, "bounded", ts.meshYAML("bounded", "10.230", "10.231", entryYAML("far", "fake", "10.200.0.0/13", "10.232.0.0/16")))
	onHost := func() map[string]*kilov1alpha1.Peer {
		peers, err := ts.peers(t, framework.HostCluster, mesh.UID)
		if err != nil {
			t.Fatal(err)
		}
		if len(peers) > 20 {
			t.Fatalf("the host holds %d Peers of the mesh, over the grant's 20", len(peers))
		}
		return peers
	}
	framework.EventuallyT(t, rcConverge, "20 Peers on the host", func() error {
		if n := len(onHost()); n != 20 {
			return fmt.Errorf("%d Peers of the mesh on the host", n)
		}
		return nil
	})
	plan := ts.typedPlan(t, ns, "bounded")
	if !hasIssue(plan.Conflicts, planner.ConflictTooManyHostPeers) {
		t.Errorf("no %s conflict in the plan: %+v", planner.ConflictTooManyHostPeers, plan.Conflicts)
	}
	if plan.HostAccess == nil || plan.HostAccess.MaxPeers != 20 || plan.HostAccess.MaxPeerKiB != meshv1alpha1.DefaultMaxHostPeerKiB {
		t.Errorf("the plan's hostAccess does not show the limits: %+v", plan.HostAccess)
	}
	// The bound on bytes: 8 KiB is a few Peers' worth.
	ts.applyGrant(t, ns, func(g *meshv1alpha1.ClusterMeshGrantSpec) {
		g.MaxHostPeers, g.MaxHostPeerKiB = ptr.To[int32](20), ptr.To[int32](8)
	})
	framework.EventuallyT(t, rcConverge, "the host's Peers within 8 KiB", func() error {
		peers := onHost()
		var bytes int64
		for _, p := range peers {
			bytes += planner.PeerBytes(p)
		}
		if len(peers) == 0 || bytes > 8<<10 {
			return fmt.Errorf("%d Peers of %d bytes on the host", len(peers), bytes)
		}
		t.Logf("%d Peers of %d bytes (as PeerBytes counts them) on the host under maxHostPeerKiB=8", len(peers), bytes)
		return nil
	})
	ts.delete(t, ns, "bounded")
}

// testMemberStrings: a member whose Nodes carry escape sequences and
// overlong locations, and name the cloud metadata and link-local addresses
// as their force-endpoint. None of it reaches a Peer on the host; a
// loopback endpoint, which the test environment's --member-server-cidrs
// allows for member servers, is allowed for endpoints alike.
func (ts *tsEnv) testMemberStrings(t *testing.T) {
	hostile := map[int64]map[string]string{
		0: {kilov1alpha1.AnnotationLocation: "fra\x1b]0;owned\x07\x1b[2J" + strings.Repeat("x", 300)},
		1: {kilov1alpha1.AnnotationForceEndpoint: "169.254.169.254:51820"},
		2: {kilov1alpha1.AnnotationForceEndpoint: "[fe80::1]:51820"},
		3: {kilov1alpha1.AnnotationForceEndpoint: "127.0.0.1:51820"},
		5: {kilov1alpha1.AnnotationLocation: "fra\u202eeurt"},
	}
	fm := ts.servingMember(t, framework.FakeContent{Nodes: 6, PodCIDRPerNode: true, NodeAnnotations: func(i int64) map[string]string { return hostile[i] }})
	ns := ts.grantedTenant(t, "hostile", fm, func(*meshv1alpha1.ClusterMeshGrantSpec) {})
	mesh := ts.createAsTenant(t, ns, "hostile", ts.meshYAML("hostile", "10.233", "10.234", entryYAML("far", "fake", "10.200.0.0/13", "10.235.0.0/16")))
	name := func(i int) string { return planner.PeerName(ns, "hostile", "far", fmt.Sprintf("node:fake-%06d", i)) }
	want := []string{name(3), name(4)}
	slices.Sort(want)
	framework.EventuallyT(t, rcConverge, "only the harmless nodes' Peers on the host", func() error {
		peers, err := ts.peers(t, framework.HostCluster, mesh.UID)
		if err != nil {
			return err
		}
		if got := slices.Sorted(maps.Keys(peers)); !slices.Equal(got, want) {
			return fmt.Errorf("Peers %v on the host, want %v", got, want)
		}
		return nil
	})
	all, err := ts.peers(t, framework.HostCluster, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		for k, v := range p.Annotations {
			if strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || len(v) > 300 {
				t.Errorf("Peer %s on the host: annotation %s is %d bytes, %.80q", p.Name, k, len(v), v)
			}
		}
		if e := p.Spec.Endpoint; e != nil && e.DNSOrIP.IP != "" {
			a, err := netip.ParseAddr(e.DNSOrIP.IP)
			if err == nil && (a.IsLinkLocalUnicast() || a == netip.MustParseAddr("169.254.169.254")) {
				t.Errorf("Peer %s on the host has the endpoint %s", p.Name, a)
			}
		}
	}
	if p := all[name(3)]; p == nil || p.Spec.Endpoint == nil || p.Spec.Endpoint.DNSOrIP.IP != "127.0.0.1" {
		t.Errorf("the loopback endpoint the environment allows is not on the host: %+v", p)
	}
	plan := ts.typedPlan(t, ns, "hostile")
	if !hasIssue(plan.Conflicts, planner.ConflictEndpointNotAllowed) {
		t.Errorf("no %s conflict in the plan: %+v", planner.ConflictEndpointNotAllowed, plan.Conflicts)
	}
	for _, c := range plan.Clusters {
		for _, d := range c.Nodes {
			if (d.Node == "fake-000000" || d.Node == "fake-000005") && d.Reason != planner.ReasonInvalidLocation {
				t.Errorf("node %s: %s, want %s", d.Node, d.Reason, planner.ReasonInvalidLocation)
			}
		}
	}
	ts.delete(t, ns, "hostile")
}

// hostServer is the host cluster's API server URL, as its kubeconfigs name it.
func (ts *tsEnv) hostServer(t *testing.T) string {
	t.Helper()
	kc, err := clientcmd.Load(ts.env.KubeconfigBytes(framework.HostCluster, framework.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	return kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].Server
}

// serverAt is the admin's kubeconfig of the host with another server URL.
func (ts *tsEnv) serverAt(t *testing.T, server string) []byte {
	t.Helper()
	kc, err := clientcmd.Load(ts.env.KubeconfigBytes(framework.HostCluster, framework.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].Server = server
	out, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testBorrowedIdentity: a mesh with no local entry and no grant names the
// host's own API server as a remote member, through a proxy path and
// plainly (with credentials that read its kube-system namespace, as a proxy
// the tenant controls would answer), and claims the earlier mesh's network.
// The proxy path is refused before any dial; the plain URL is recognised as
// the local cluster and claims nothing; the earlier mesh's updates go on.
func (ts *tsEnv) testBorrowedIdentity(first *meshv1alpha1.ClusterMesh) func(t *testing.T) {
	return func(t *testing.T) {
		fm := ts.servingMember(t, framework.FakeContent{Nodes: 1})
		ns := ts.namespace(t, "borrower")
		kc, err := fm.Kubeconfig()
		if err != nil {
			t.Fatal(err)
		}
		ts.putSecret(t, ns, "fake", kc)
		host := strings.TrimSuffix(ts.hostServer(t), "/")
		ts.putSecret(t, ns, "proxied", ts.serverAt(t, host+"/api/v1/namespaces/"+ns+"/services/https:fake:443/proxy"))
		ts.putSecret(t, ns, "plain", ts.serverAt(t, host))
		borrower := func(name, secret string) string {
			return fmt.Sprintf("apiVersion: mesh.kilo.squat.ai/v1alpha1\nkind: ClusterMesh\nmetadata:\n  name: %s\nspec:\n  clusters:\n", name) +
				entryYAML("borrowed", secret, "10.11.0.0/16", "10.236.0.0/16") + entryYAML("far", "fake", "10.200.0.0/13", "10.237.0.0/16")
		}
		ts.create(t, ns, borrower("proxied", "proxied"))
		ts.create(t, ns, borrower("plain", "plain"))
		framework.EventuallyT(t, rcConverge, "the proxy path refused", func() error {
			return clusterError(ts.get(t, ns, "proxied"), "borrowed", "ServerPathNotAllowed")
		})
		framework.EventuallyT(t, rcConverge, "the host recognised behind a remote entry", func() error {
			return clusterError(ts.get(t, ns, "plain"), "borrowed", "IsLocalCluster")
		})
		// The earlier mesh changes its spec: nothing of the borrowers blocks it.
		patch := `[{"op":"add","path":"/spec/clusters/2/persistentKeepalive","value":25}]`
		if _, stderr, err := ts.env.Kubectl(context.Background(), framework.HostCluster, framework.UserAdmin, "-n", ts.ns, "patch", "clustermesh", "first", "--type=json", "-p", patch); err != nil {
			t.Fatalf("the earlier mesh's update was refused: %v\n%s", err, stderr)
		}
		t.Cleanup(func() {
			undo := `[{"op":"remove","path":"/spec/clusters/2/persistentKeepalive"}]`
			_, _, _ = ts.env.Kubectl(context.Background(), framework.HostCluster, framework.UserAdmin, "-n", ts.ns, "patch", "clustermesh", "first", "--type=json", "-p", undo)
		})
		framework.EventuallyT(t, rcConverge, "the earlier mesh Ready with its update applied", func() error {
			m := ts.mesh(t, "first")
			if m.Status.ObservedGeneration != m.Generation {
				return fmt.Errorf("status of generation %d, spec %d", m.Status.ObservedGeneration, m.Generation)
			}
			if err := wantCondition(m, meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady); err != nil {
				return err
			}
			return ts.allMatchView(t, first)
		})
		if plan := ts.plan(t, ts.ns, "first"); strings.Contains(plan, planner.ConflictCIDRClaimedByOtherMesh) {
			t.Errorf("a borrower's claim reached the earlier mesh's plan:\n%s", plan)
		}
		ts.delete(t, ns, "proxied")
		ts.delete(t, ns, "plain")
	}
}
