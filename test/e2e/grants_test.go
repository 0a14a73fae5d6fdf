//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Host access as attacks against the real server: tenants hold only edit
// in their namespace, the shipped defaults otherwise, and try to steer the
// host cluster's traffic. Grants are created, narrowed and deleted by an
// admin while meshes run. The subtests of TestGrants build on each other.

func TestGrants(t *testing.T) {
	g := startGrantsEnv(t)
	ctx := context.Background()
	tenant := framework.UserTenantA
	ns := g.tenantNamespace(t, "grants", tenant)

	t.Run("without a grant the hijack is refused with 403", func(t *testing.T) {
		stderr, err := g.create(tenant, ns, named(hijackMesh, "hijack"))
		if err == nil {
			t.Fatal("a tenant with edit created a mesh reaching into the host without a grant")
		}
		for _, want := range []string{"forbidden", "spec.clusters[0].local", "create, update, delete peers.kilo.squat.ai",
			"you may not create, update, delete", `ClusterMeshGrant covering namespace "` + ns + `" (none does)`} {
			if !strings.Contains(stderr, want) {
				t.Errorf("the refusal lacks %q: %s", want, stderr)
			}
		}
	})

	if err := g.env.ApplyGrant(ctx, "tenant", tenantGrant(ns)); err != nil {
		t.Fatal(err)
	}

	t.Run("with a grant that does not cover the networks the hijack is refused with 422", func(t *testing.T) {
		var stderr string
		// The grant reaches the server's caches through a watch.
		framework.EventuallyT(t, promptly, "a 422 instead of a 403", func() error {
			var err error
			if stderr, err = g.create(tenant, ns, named(hijackMesh, "hijack")); err == nil {
				return fmt.Errorf("the hijack was accepted")
			}
			if strings.Contains(stderr, "forbidden") {
				return fmt.Errorf("still refused for want of a grant: %s", stderr)
			}
			return nil
		})
		for _, want := range []string{"is invalid",
			`spec.clusters[1].additionalCIDRs[0]: Invalid value: "0.0.0.0/1": outside the memberNetworks of the ClusterMeshGrants covering namespace "` + ns + `"`,
			`spec.clusters[1].additionalCIDRs[1]: Invalid value: "128.0.0.0/1"`} {
			if !strings.Contains(stderr, want) {
				t.Errorf("the refusal lacks %q: %s", want, stderr)
			}
		}
		if strings.Contains(stderr, "podCIDRs") || strings.Contains(stderr, "wireguardCIDR") {
			t.Errorf("networks inside the grant were refused: %s", stderr)
		}
		if out := g.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", ns, "get", "cmesh", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("a refused mesh was stored: %s", out)
		}
	})

	t.Run("a user with Peer rights can, and gains nothing", func(t *testing.T) {
		own := g.tenantNamespace(t, "peer-admin", peerAdmin)
		var stderr string
		// The delegated authorizer caches answers for 10 s.
		framework.EventuallyT(t, promptly, "the mesh of a user with Peer rights accepted", func() error {
			var err error
			if stderr, err = g.create(peerAdmin, own, named(hijackMesh, "routes")); err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		})
		rc := g.in(own)
		framework.EventuallyT(t, rcConverge, "the Peer on the host, and Granted", func() error {
			m := rc.mesh(t, "routes")
			if got := m.Annotations[meshv1alpha1.AnnotationHostAccess]; got != meshv1alpha1.HostAccessPeerRights {
				return fmt.Errorf("recorded %q", got)
			}
			if err := wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionTrue, planner.HostReasonPeerRights); err != nil {
				return err
			}
			if len(g.hijacksFrom(own)) == 0 {
				return fmt.Errorf("no Peer routing half the IPv4 space on the host yet")
			}
			return nil
		})
		if err := rc.meshes().Delete(ctx, "routes", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, rcConverge, "the mesh and its Peers gone", func() error {
			if rc.mesh(t, "routes") != nil {
				return fmt.Errorf("the mesh is still there")
			}
			return nil
		})
		// The same watch saw the tenant's attempts: none of them ever
		// became a Peer.
		if seen := g.hijacksFrom(ns); len(seen) > 0 {
			t.Errorf("the tenant's refused meshes put Peers on the host: %v", seen)
		}
	})

	var mesh *meshv1alpha1.ClusterMesh
	rc := g.in(ns)
	t.Run("the host-access record cannot be forged", func(t *testing.T) {
		// The manifest claims peer-rights; admission decides and overwrites.
		// (Admission may still see the mesh just deleted, which claimed
		// half of everything.)
		framework.EventuallyT(t, promptly, "a mesh inside the grant accepted", func() error {
			if stderr, err := g.create(tenant, ns, named(tenantMesh, "mine")); err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		})
		record := func() string { return rc.mesh(t, "mine").Annotations[meshv1alpha1.AnnotationHostAccess] }
		if got := record(); got != meshv1alpha1.HostAccessGrant {
			t.Fatalf("recorded %q, want %q", got, meshv1alpha1.HostAccessGrant)
		}
		for _, attempt := range [][]string{
			{"annotate", "--overwrite", "cmesh", "mine", meshv1alpha1.AnnotationHostAccess + "=" + meshv1alpha1.HostAccessPeerRights},
			{"annotate", "cmesh", "mine", meshv1alpha1.AnnotationHostAccess + "-"},
			{"patch", "cmesh", "mine", "--type=json", "-p", `[{"op":"remove","path":"/metadata/annotations"}]`},
		} {
			g.env.KubectlT(t, framework.HostCluster, tenant, append([]string{"-n", ns}, attempt...)...)
			if got := record(); got != meshv1alpha1.HostAccessGrant {
				t.Errorf("after kubectl %v: recorded %q", attempt, got)
			}
		}
		// Claiming peer-rights does not lift the grant's bounds either.
		outside := strings.Replace(named(tenantMesh, "forged"), `podCIDRs: ["10.11.0.0/16"]`, `podCIDRs: ["10.11.0.0/16"]`+"\n    additionalCIDRs: [\"192.0.2.0/24\"]", 1)
		if stderr, err := g.create(tenant, ns, outside); err == nil || !strings.Contains(stderr, `spec.clusters[1].additionalCIDRs[0]: Invalid value: "192.0.2.0/24": outside the memberNetworks`) {
			t.Errorf("a forged record lifted the grant's bounds: %v: %s", err, stderr)
		}
		framework.EventuallyT(t, rcConverge, "the mesh applied and Granted", func() error {
			mesh = rc.mesh(t, "mine")
			if err := wantCondition(mesh, meshv1alpha1.ConditionGranted, metav1.ConditionTrue, planner.HostReasonGranted); err != nil {
				return err
			}
			if len(g.meshPeers(t, ns, 0, string(mesh.UID))) != 2 {
				return fmt.Errorf("the host does not hold the Peers of locations a and b")
			}
			return rc.allMatchView(t, mesh, 0, 1)
		})
	})
	if mesh == nil {
		t.Fatal("no mesh to narrow the grant of")
	}

	t.Run("grant narrowed", func(t *testing.T) {
		before := g.meshPeers(t, ns, 0, string(mesh.UID))
		keep := before[planner.PeerName(ns, "mine", "cluster-1", "location:a")]
		gone := planner.PeerName(ns, "mine", "cluster-1", "location:b")
		if keep == nil || before[gone] == nil {
			t.Fatalf("the host holds %v", before)
		}
		narrowed := tenantGrant(ns)
		narrowed.MemberNetworks = keep.Spec.AllowedIPs
		start := time.Now()
		if err := g.env.ApplyGrant(ctx, "tenant", narrowed); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, promptly, "the uncovered Peer gone from the host", func() error {
			have := g.meshPeers(t, ns, 0, string(mesh.UID))
			if have[gone] != nil {
				return fmt.Errorf("%s still on the host", gone)
			}
			if p := have[keep.Name]; p == nil || p.ResourceVersion != keep.ResourceVersion {
				return fmt.Errorf("the covered Peer %s was changed or removed", keep.Name)
			}
			return nil
		})
		t.Logf("a narrowed grant took %s from the write of the grant to remove the uncovered Peer from the host", time.Since(start).Round(time.Millisecond))
		framework.EventuallyT(t, rcConverge, "Granted=False saying why, the plan showing it", func() error {
			m := rc.mesh(t, "mine")
			if err := wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonNetworksNotGranted); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionGranted); !strings.Contains(c.Message, "spec.clusters[1].podCIDRs[0] 10.11.0.0/16") {
				return fmt.Errorf("the condition does not name the uncovered network: %s", c.Message)
			}
			p := g.plan(t, ns, "mine")
			if p.HostAccess == nil || p.HostAccess.Granted || p.HostAccess.Reason != planner.HostReasonNetworksNotGranted ||
				!slices.Equal(p.HostAccess.MemberNetworks, narrowed.MemberNetworks) {
				return fmt.Errorf("plan's hostAccess %+v", p.HostAccess)
			}
			if !slices.ContainsFunc(p.Conflicts, func(i meshv1alpha1.PlanIssue) bool {
				return i.Reason == planner.ConflictOutsideHostAccess && i.Cluster == "cluster-1" && i.Target == "cluster-0"
			}) {
				return fmt.Errorf("no %s conflict in the plan: %+v", planner.ConflictOutsideHostAccess, p.Conflicts)
			}
			if len(rc.events(t, "mine", planner.HostReasonNetworksNotGranted)) == 0 {
				return fmt.Errorf("no %s event", planner.HostReasonNetworksNotGranted)
			}
			return rc.allMatchView(t, m, 0, 1)
		})
	})

	t.Run("grant deleted", func(t *testing.T) {
		start := time.Now()
		if err := g.env.DeleteGrant(ctx, "tenant"); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, promptly, "the mesh's Peers gone from the host and the host's from cluster 1", func() error {
			if have := g.meshPeers(t, ns, 0, string(mesh.UID)); len(have) > 0 {
				return fmt.Errorf("the host still holds %d Peers", len(have))
			}
			for name, p := range g.meshPeers(t, ns, 1, string(mesh.UID)) {
				if p.Labels[planner.LabelSourceCluster] == "cluster-0" {
					return fmt.Errorf("cluster 1 still holds %s, representing the host", name)
				}
			}
			return nil
		})
		t.Logf("a deleted grant took %s from its deletion to empty the host", time.Since(start).Round(time.Millisecond))
		framework.EventuallyT(t, rcConverge, "Granted=False NoGrant, the plan showing it", func() error {
			m := rc.mesh(t, "mine")
			if err := wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonNoGrant); err != nil {
				return err
			}
			p := g.plan(t, ns, "mine")
			for _, tp := range p.Targets {
				if tp.Cluster == "cluster-0" && tp.DesiredPeers != 0 {
					return fmt.Errorf("the plan still wants %d Peers on the host", tp.DesiredPeers)
				}
			}
			if p.HostAccess == nil || p.HostAccess.Basis != meshv1alpha1.HostAccessBasisNone {
				return fmt.Errorf("plan's hostAccess %+v", p.HostAccess)
			}
			return nil
		})
		// Rewriting the spec does not win the access back.
		_, stderr, err := g.env.Kubectl(ctx, framework.HostCluster, tenant, "-n", ns, "patch", "cmesh", "mine", "--type=merge",
			"-p", `{"spec":{"clusters":[{"name":"cluster-0","local":true,"podCIDRs":["10.10.0.0/16"],"wireguardCIDR":"10.40.0.0/16","persistentKeepalive":25},`+
				`{"name":"cluster-1","kubeconfigSecretRef":{"name":"cluster-1-kubeconfig"},"podCIDRs":["10.11.0.0/16"],"wireguardCIDR":"10.41.0.0/16"}]}}`)
		if err == nil || !strings.Contains(stderr, "forbidden") {
			t.Errorf("a spec update without a grant: %v: %s", err, stderr)
		}
	})

	t.Run("upgrade grace period", func(t *testing.T) {
		g.upgradeGracePeriod(t)
	})
}
