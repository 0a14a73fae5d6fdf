//go:build e2e

package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testJoinServices: an earlier version's single role has its services rights
// carried over (testJoinCarriesOver); --services adds the services role to
// the identity of a joined cluster (exactly its rights, by SubjectAccessReviews); a rerun
// without the flag applies it again rather than taking it away, and
// --services=false leaves it as it is.
func testJoinServices(t *testing.T, env *framework.Env, joinArgs []string) {
	ctx := context.Background()
	testJoinCarriesOver(t, env, joinArgs)
	roles := env.Client(2, framework.UserAdmin).RbacV1()
	if err := roles.ClusterRoleBindings().Delete(ctx, member.ServicesClusterRoleBinding, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := roles.ClusterRoles().Delete(ctx, member.ServicesClusterRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r := mustMesh(t, env, framework.UserAdmin, append(joinArgs, "--services")...)
	for _, want := range []string{"ClusterRole/kilo-mesh-member:services: created", "ClusterRoleBinding/kilo-mesh-member:services: created",
		"ClusterRole/kilo-mesh-member: unchanged", "Services rights: granted (--services)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("join --services output lacks %q:\n%s", want, r)
		}
	}
	checkMemberRights(t, env, 2, true)
	r = mustMesh(t, env, framework.UserAdmin, joinArgs...)
	for _, want := range []string{"ClusterRole/kilo-mesh-member:services: unchanged", "Services rights: granted (kept: ClusterRole kilo-mesh-member:services exists"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("rerun output lacks %q:\n%s", want, r)
		}
	}
	r = mustMesh(t, env, framework.UserAdmin, append(joinArgs, "--services=false")...)
	if !strings.Contains(r.stdout, "Services rights: not granted (--services=false; ClusterRole kilo-mesh-member:services exists and is left as it is") ||
		strings.Contains(r.stdout, "kilo-mesh-member:services:") {
		t.Errorf("join --services=false touched the services role or did not say so:\n%s", r)
	}
	if _, err := env.Client(2, framework.UserAdmin).RbacV1().ClusterRoles().Get(ctx, member.ServicesClusterRole, metav1.GetOptions{}); err != nil {
		t.Errorf("ClusterRole %s after --services=false: %v", member.ServicesClusterRole, err)
	}
	checkMemberRights(t, env, 2, true)
}

// checkMemberRights: the member identity on cluster may do exactly its
// rights (with services, its services rights too), as its RBAC answers.
func checkMemberRights(t *testing.T, env *framework.Env, cluster int, services bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	problems, err := env.MemberRightsProblems(ctx, cluster, services)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// testJoinCarriesOver: a member whose ClusterRole kilo-mesh-member holds the
// services rules too, as an earlier version's single role did, keeps them
// when join runs again for a mesh without services: the base role becomes
// the base rights alone and the services role holds the rest, so a mesh with
// services sharing the cluster loses nothing.
func testJoinCarriesOver(t *testing.T, env *framework.Env, joinArgs []string) {
	ctx := context.Background()
	roles := env.Client(2, framework.UserAdmin).RbacV1().ClusterRoles()
	old, err := roles.Get(ctx, member.ClusterRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old.Rules = append(old.Rules, member.ServicesRules()...)
	if _, err := roles.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := mustMesh(t, env, framework.UserAdmin, joinArgs...)
	for _, want := range []string{"ClusterRole/kilo-mesh-member: configured", "ClusterRole/kilo-mesh-member:services: created",
		"Services rights: granted (carried over: ClusterRole kilo-mesh-member held them"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("join over an earlier version's role: output lacks %q:\n%s", want, r)
		}
	}
	checkMemberRights(t, env, 2, true)
	base, err := roles.Get(ctx, member.ClusterRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Rules) != len(member.BaseRules()) {
		t.Errorf("ClusterRole %s keeps %d rules, want the %d base ones", member.ClusterRole, len(base.Rules), len(member.BaseRules()))
	}
}
