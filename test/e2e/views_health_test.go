//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// plannedFor is the WireGuard rendering's header time.
var plannedFor = regexp.MustCompile(`planned for [0-9TZ:-]+\.`)

// testStatusPeers: the design's path of the peers view answers what the
// peers view answers, byte for byte but for the plan's time, and only to users who may get
// clustermeshes/peers (the server asks a SubjectAccessReview).
func testStatusPeers(t *testing.T, v *viewsEnv) {
	for _, query := range []string{"", "?cluster=east", "?cluster=west&format=wireguard", "?format=dot"} {
		t.Run("peers"+query, func(t *testing.T) {
			want, err := v.raw(t, framework.UserViewerA, "peers"+query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := v.raw(t, framework.UserViewerA, "status/peers"+query)
			if err != nil {
				t.Fatal(err)
			}
			// A plan is made again once it is plancache.MaxAge old, so the two GETs may see two.
			if plannedFor.ReplaceAllString(got, "planned for T.") != plannedFor.ReplaceAllString(want, "planned for T.") || got == "" {
				t.Errorf("status/peers%s differs from peers%s:\n%s\n---\n%s", query, query, got, want)
			}
		})
	}
	if _, err := v.raw(t, framework.UserViewerA, "status/peers?cluster=nowhere"); err == nil || !strings.Contains(err.Error(), "not a member") {
		t.Errorf("status/peers?cluster=nowhere: want the peers view's error, got %v", err)
	}

	// status-reader may read meshes and their status, not their Peers.
	ctx := context.Background()
	admin := v.env.Client(framework.HostCluster, framework.UserAdmin)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "status-reader", Namespace: v.ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"mesh.kilo.squat.ai"}, Resources: []string{"clustermeshes", "clustermeshes/status"}, Verbs: []string{"get"},
	}}}
	if _, err := admin.RbacV1().Roles(v.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "status-reader", Namespace: v.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "status-reader"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "status-reader"}}}
	if _, err := admin.RbacV1().RoleBindings(v.ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, viewsSettle, "status-reader reads the status", func() error {
		_, err := v.raw(t, "status-reader", "status")
		return err
	})
	for _, path := range []string{"status/peers", "status/peers?cluster=east", "peers"} {
		_, err := v.raw(t, "status-reader", path)
		if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "clustermeshes/peers") {
			t.Errorf("status-reader reading %s: want Forbidden on clustermeshes/peers, got %v", path, err)
		}
	}
}

// testSameCluster runs while west's Secret points at north's cluster.
func testSameCluster(t *testing.T, v *viewsEnv) {
	framework.EventuallyT(t, viewsSettle, "SameCluster in the plan", func() error {
		for _, c := range v.plan(t).Conflicts {
			if c.Reason == planner.ConflictSameCluster && c.Cluster == "west" && strings.Contains(c.Message, "entries north, west reach the same cluster") {
				return nil
			}
		}
		return fmt.Errorf("no SameCluster conflict naming north and west")
	})
	framework.EventuallyT(t, viewsSettle, "SameCluster named by PeersCarried", func() error {
		out, err := v.kubectl(t, framework.UserViewerA, "-n", v.ns, "get", "clustermesh", "views", "-o", "json")
		if err != nil {
			return err
		}
		var m meshv1alpha1.ClusterMesh
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			return err
		}
		c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionPeersCarried)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, planner.ConflictSameCluster) {
			return fmt.Errorf("PeersCarried: %+v", c)
		}
		return nil
	})
}

// testSecretTypos: the views mesh again under another name, its Secret
// names mistyped. Before, the unknown cluster made the overlap check with
// the views mesh answer; now the missing Secret or key is the answer.
func testSecretTypos(t *testing.T, v *viewsEnv) {
	base := strings.Replace(viewsMesh, "name: views", "name: typo", 1)
	for name, tt := range map[string]struct{ from, to, field, message string }{
		"Secret": {"{name: west-kubeconfig}", "{name: west-kubecnfig}", "spec.clusters[1].kubeconfigSecretRef.name", `no Secret "west-kubecnfig" in namespace`},
		"key":    {"{name: west-kubeconfig}", "{name: west-kubeconfig, key: kubecfg}", "spec.clusters[1].kubeconfigSecretRef.key", `Secret "west-kubeconfig" has no key "kubecfg"`},
	} {
		t.Run(name, func(t *testing.T) {
			mesh := strings.Replace(base, tt.from, tt.to, 1)
			_, stderr, err := v.env.KubectlWithInput(context.Background(), strings.NewReader(mesh), framework.HostCluster, framework.UserTenantA, "-n", v.ns, "create", "-f", "-")
			if err == nil || !strings.Contains(stderr, "is invalid") || !strings.Contains(stderr, tt.field) || !strings.Contains(stderr, tt.message) {
				t.Fatalf("want 422 at %s, got %v: %s", tt.field, err, stderr)
			}
			if strings.Contains(stderr, "overlaps") {
				t.Errorf("the refusal still speaks of overlaps: %s", stderr)
			}
		})
	}
}
