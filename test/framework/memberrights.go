package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
)

// memberRight is what the member identity may do with one resource
// (group/resource[/subresource]): verbs on any object, and verbs on the
// named objects alone.
type memberRight struct {
	any   []string
	named map[string][]string
}

// memberRights are what the member identity may do, written out here rather
// than taken from pkg/member, so that a widened role fails: its base rights,
// and with services its services rights too. Every other resource listed is
// refused every verb.
func memberRights(services bool) map[string]memberRight {
	manage := []string{"get", "list", "watch", "create", "update", "delete"}
	rights := map[string]memberRight{
		"/nodes":              {any: []string{"get", "list", "watch"}},
		"/namespaces":         {named: map[string][]string{"kube-system": {"get"}}},
		"kilo.squat.ai/peers": {any: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	}
	svc := map[string]memberRight{
		"/namespaces":                                 {any: []string{"list", "watch"}, named: map[string][]string{"kube-system": {"get"}}},
		"/services":                                   {any: manage},
		"discovery.k8s.io/endpointslices":             {any: manage},
		"multicluster.x-k8s.io/serviceexports":        {any: []string{"list", "watch"}},
		"multicluster.x-k8s.io/serviceexports/status": {any: []string{"update"}},
		"multicluster.x-k8s.io/serviceimports":        {any: manage},
		"multicluster.x-k8s.io/serviceimports/status": {any: []string{"update"}},
	}
	for key, r := range svc {
		if !services {
			r = memberRight{}
			if base, ok := rights[key]; ok {
				r = base
			}
		}
		rights[key] = r
	}
	// Nothing of these: Secrets, workloads, writes to what users own, and
	// every way to widen its own rights.
	for _, key := range []string{"/secrets", "/pods", "/configmaps", "/endpoints", "/services/status", "/nodes/status",
		"/namespaces/status", "/namespaces/finalize", "/serviceaccounts", "/serviceaccounts/token", "/users",
		"rbac.authorization.k8s.io/clusterroles", "rbac.authorization.k8s.io/clusterrolebindings", "rbac.authorization.k8s.io/roles",
		"apiextensions.k8s.io/customresourcedefinitions", "admissionregistration.k8s.io/mutatingwebhookconfigurations"} {
		rights[key] = memberRight{}
	}
	return rights
}

var everyMemberVerb = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "impersonate", "escalate", "bind"}

// MemberRightsProblems asks cluster's RBAC authorizer, by SubjectAccessReviews,
// whether the member identity may do each verb on each resource of
// memberRights, cluster-wide and in two namespaces, on any object and on the
// named ones; it returns every answer that differs from the identity's
// rights (with services, its services rights too).
func (e *Env) MemberRightsProblems(ctx context.Context, cluster int, services bool) ([]string, error) {
	sars := e.Client(cluster, UserAdmin).AuthorizationV1().SubjectAccessReviews()
	review := func(attrs *authorizationv1.ResourceAttributes) (*authorizationv1.SubjectAccessReview, error) {
		return sars.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               member.Username(),
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + member.Namespace, "system:authenticated"},
			ResourceAttributes: attrs,
		}}, metav1.CreateOptions{})
	}
	// The authorizer follows RBAC objects through a cache: wait until it
	// has the roles just applied or removed, told by one right of each.
	err := Eventually(ctx, 100*time.Millisecond, 30*time.Second, func(context.Context) error {
		for _, c := range []struct {
			attrs *authorizationv1.ResourceAttributes
			want  bool
		}{
			{&authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}, true},
			{&authorizationv1.ResourceAttributes{Verb: "list", Group: "multicluster.x-k8s.io", Resource: "serviceimports"}, services},
		} {
			got, err := review(c.attrs)
			if err != nil {
				return err
			}
			if got.Status.Allowed != c.want {
				return fmt.Errorf("%s %s allowed %v, want %v", c.attrs.Verb, c.attrs.Resource, got.Status.Allowed, c.want)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the member identity's roles to take effect: %w", err)
	}
	var problems []string
	for key, right := range memberRights(services) {
		group, rest, _ := strings.Cut(key, "/")
		resource, sub, _ := strings.Cut(rest, "/")
		names := []string{"any"}
		for name := range right.named {
			names = append(names, name)
		}
		for _, verb := range everyMemberVerb {
			for _, ns := range []string{"", "shop", "kube-system"} {
				for _, name := range names {
					attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name}
					if verb == "list" || verb == "watch" || verb == "create" || verb == "deletecollection" {
						if name != "any" {
							continue
						}
						attrs.Name = ""
					}
					got, err := review(attrs)
					if err != nil {
						return nil, fmt.Errorf("SubjectAccessReview %s %s in %q: %w", verb, key, ns, err)
					}
					want := slices.Contains(right.any, verb) || slices.Contains(right.named[name], verb)
					if got.Status.Allowed != want {
						problems = append(problems, fmt.Sprintf("%s %s %q in namespace %q: allowed %v, want %v (%s)", verb, key, attrs.Name, ns, got.Status.Allowed, want, got.Status.Reason))
					}
				}
			}
		}
	}
	slices.Sort(problems)
	return problems, nil
}
