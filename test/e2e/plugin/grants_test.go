//go:build e2e

package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testJoinUnderGrants: a tenant without Peer rights on the host is told
// which ClusterMeshGrant join needs, and which of the member's networks a
// grant does not cover; nothing is written until a grant covers them.
func testJoinUnderGrants(ctx context.Context, t *testing.T, env *framework.Env) {
	hostKube := env.Client(framework.HostCluster, framework.UserAdmin)
	// Another mesh, in a namespace tenant-a edits, on networks of its
	// own (meshes sharing clusters may not overlap).
	tns, err := env.NewNamespace(ctx, "tenant-join")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.GrantNamespaceRole(ctx, framework.HostCluster, tns, framework.UserTenantA, "edit"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.CreateKubeconfigSecret(ctx, tns, "west-kubeconfig", 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	other := strings.NewReplacer("10.42.", "10.142.", "10.43.", "10.143.", "10.4.", "10.104.", "10.52.", "10.152.", "10.53.", "10.153.", "10.5.", "10.105.").Replace(joinMesh)
	env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, other, "apply", "-n", tns, "-f", "-")
	tenantMeshes := env.Dynamic(framework.HostCluster, framework.UserAdmin).Resource(framework.ClusterMeshGVR).Namespace(tns)
	before, err := tenantMeshes.Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"join", "demo", "-n", tns, "--name", "north", "--member-kubeconfig", env.Kubeconfig(2, framework.UserAdmin),
		"--pod-cidrs", "10.162.0.0/16", "--wireguard-cidr", "10.106.0.0/16", "--service-cidr", ""}

	r := mesh(t, env, framework.UserTenantA, args...)
	if r.code != 1 || !strings.Contains(r.stderr, "nothing was changed") || !strings.Contains(r.stderr, `a ClusterMeshGrant covering namespace "`+tns+`"`) {
		t.Errorf("join without Peer rights or a grant: want exit 1 naming the grant needed, got %s", r)
	}
	if _, err := hostKube.CoreV1().Secrets(tns).Get(ctx, "north-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused join wrote the Secret (get: %v)", err)
	}

	// A grant that does not cover north's networks: the server names them.
	narrow := framework.TenantGrant(tns)
	narrow.MemberNetworks = []string{"10.152.0.0/16", "10.153.0.0/16", "10.105.0.0/16"}
	if err := env.ApplyGrant(ctx, tns, narrow); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 30*time.Second, "join under a narrow grant names north's networks", func() error {
		r = mesh(t, env, framework.UserTenantA, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "spec.clusters[2].podCIDRs[0]") || !strings.Contains(r.stderr, "outside the memberNetworks") {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	// The reconciler writes the status; the spec's generation is the user's.
	if after, err := tenantMeshes.Get(ctx, "demo", metav1.GetOptions{}); err != nil || after.GetGeneration() != before.GetGeneration() {
		t.Errorf("refused joins changed the mesh's spec (%v)", err)
	}

	if err := env.ApplyGrant(ctx, tns, framework.TenantGrant(tns)); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 30*time.Second, "join under a covering grant", func() error {
		if r = mesh(t, env, framework.UserTenantA, args...); r.code != 0 {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	if !strings.Contains(r.stdout, "entry north added") {
		t.Errorf("join under a grant:\n%s", r)
	}

}
