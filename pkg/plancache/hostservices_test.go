package plancache

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	clocktesting "k8s.io/utils/clock/testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/grants"
)

// rightsIn allows every review of a user in the namespaces listed for it,
// and counts the reviews.
type rightsIn struct {
	allowed map[string][]string // user -> namespaces
	reviews int
}

func (r *rightsIn) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	r.reviews++
	for _, ns := range r.allowed[a.GetUser().GetName()] {
		if ns == a.GetNamespace() {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// TestHostServices: a host namespace is usable by grant or by the author's
// own rights; answers are kept for the TTL, and at most max of them.
func TestHostServices(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC))
	authz := &rightsIn{allowed: map[string][]string{"alice": {"team-a"}}}
	h := &hostServices{authz: authz, clock: clk, ttl: time.Minute, max: 2,
		grants: &testGrants{synced: true, cov: map[string]grants.Coverage{"tenant": {Grants: []string{"g"}, ServiceNamespaces: []string{"granted"}}}}}
	by := func(name string) *meshv1alpha1.ClusterMesh {
		m := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "m"}}
		if name != "" {
			v, err := grants.EncodeAuthor(&user.DefaultInfo{Name: name, Groups: []string{"system:authenticated"}})
			if err != nil {
				t.Fatal(err)
			}
			m.Annotations = map[string]string{meshv1alpha1.AnnotationServicesAuthor: v}
		}
		return m
	}
	check := func(mesh *meshv1alpha1.ClusterMesh, ns []string, want ...string) time.Time {
		t.Helper()
		got, until, err := h.notGranted(mesh, ns)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("not granted %v, want %v", got, want)
		}
		for _, w := range want {
			if !strings.Contains(got[w], "serviceNamespaces") {
				t.Errorf("namespace %s: %q", w, got[w])
			}
		}
		return until
	}
	t.Run("a granted namespace needs no review", func(t *testing.T) {
		if until := check(by("bob"), []string{"granted"}); !until.IsZero() || authz.reviews != 0 {
			t.Errorf("until %v after %d reviews", until, authz.reviews)
		}
	})
	t.Run("the author's own rights allow, all of them reviewed", func(t *testing.T) {
		until := check(by("alice"), []string{"granted", "kube-system", "team-a"}, "kube-system")
		if !until.Equal(clk.Now().Add(time.Minute)) || authz.reviews != len(hostServiceRights)+1 {
			t.Errorf("until %v after %d reviews", until, authz.reviews)
		}
	})
	t.Run("answers are kept for the TTL", func(t *testing.T) {
		before := authz.reviews
		check(by("alice"), []string{"kube-system", "team-a"}, "kube-system")
		if authz.reviews != before {
			t.Errorf("%d reviews more", authz.reviews-before)
		}
		clk.SetTime(clk.Now().Add(time.Minute))
		check(by("alice"), []string{"kube-system", "team-a"}, "kube-system")
		if authz.reviews == before {
			t.Error("no review after the TTL")
		}
	})
	t.Run("at most max answers are kept", func(t *testing.T) {
		check(by("mallory"), []string{"n1", "n2", "n3", "n4"}, "n1", "n2", "n3", "n4")
		if len(h.answers) > 2 {
			t.Errorf("%d answers kept, max 2", len(h.answers))
		}
	})
	t.Run("a mesh without an author has only its grants", func(t *testing.T) {
		check(by(""), []string{"granted", "team-a"}, "team-a")
	})
	t.Run("unread grants decide nothing", func(t *testing.T) {
		h.grants.(*testGrants).synced = false
		defer func() { h.grants.(*testGrants).synced = true }()
		if _, _, err := h.notGranted(by("alice"), []string{"team-a"}); err == nil {
			t.Error("an answer without the grants")
		}
	})
	t.Run("another user is another author", func(t *testing.T) {
		check(by("bob"), []string{"team-a"}, "team-a")
	})
}
