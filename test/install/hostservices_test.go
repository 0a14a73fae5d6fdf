//go:build e2e

package install

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// hostServicesRights are what the server does for multi-cluster services
// on the host (pkg/clusters' informers, pkg/reconciler's writes): resource
// (group/resource[/subresource]) -> the verbs it needs, and may.
var hostServicesRights = map[string][]string{
	"/services":                                   {"get", "list", "watch", "create", "update", "delete"},
	"discovery.k8s.io/endpointslices":             {"get", "list", "watch", "create", "update", "delete"},
	"multicluster.x-k8s.io/serviceexports":        {"list", "watch"},
	"multicluster.x-k8s.io/serviceexports/status": {"update"},
	"multicluster.x-k8s.io/serviceimports":        {"get", "list", "watch", "create", "update", "delete"},
	"multicluster.x-k8s.io/serviceimports/status": {"update"},
}

// everyVerb is every verb RBAC knows for a resource.
var everyVerb = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// hostServicesNamespace is where the rights are installed, apart from the
// other tests' servers.
const hostServicesNamespace = "mesh-host-services"

// TestHostServicesRights: without hostServices.enabled (and kustomize's
// component) nothing renders for services and the server's ServiceAccount,
// its whole RBAC applied to a real kube-apiserver, may do nothing with
// Services, EndpointSlices, ServiceExports or ServiceImports; with it, the
// ServiceAccount may do exactly what the server does with them in every
// namespace, and no more (no patch, no deletecollection, no write to a
// ServiceExport itself). TestChartEqualsKustomize shows the component
// renders the same objects.
func TestHostServicesRights(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	byName := map[string]rendering{}
	for _, r := range renderings(t) {
		byName[r.name] = r
	}
	for _, name := range []string{"kustomize default", "helm default", "kustomize ha", "helm ha"} {
		t.Run("off: "+name, func(t *testing.T) {
			for _, u := range decode(t, render(t, ctx, byName[name])) {
				if strings.Contains(u.GetName(), "host-services") {
					t.Errorf("%s %s renders without host services", u.GetKind(), u.GetName())
				}
				if rules, _, _ := unstructured.NestedSlice(u.Object, "rules"); servicesRule(rules) != "" {
					t.Errorf("%s %s grants %s without host services", u.GetKind(), u.GetName(), servicesRule(rules))
				}
			}
		})
	}

	if _, stderr, err := env.Kubectl(ctx, 1, admin, "create", "namespace", hostServicesNamespace); err != nil && !strings.Contains(stderr, "AlreadyExists") {
		t.Fatalf("kubectl create namespace: %v\n%s", err, stderr)
	}
	for _, tc := range []struct {
		name string
		set  []string
		want map[string][]string
	}{
		{name: "off", want: map[string][]string{}},
		{name: "on", set: []string{"hostServices.enabled=true"}, want: hostServicesRights},
	} {
		t.Run("applied, "+tc.name, func(t *testing.T) {
			r := rendering{name: "helm " + tc.name, chart: "kilo-mesh-apiserver", set: tc.set, namespace: hostServicesNamespace}
			applyRBAC(t, ctx, decode(t, render(t, ctx, r)))
			for _, res := range slices.Sorted(maps.Keys(hostServicesRights)) {
				for _, verb := range everyVerb {
					want := slices.Contains(tc.want[res], verb)
					got, err := serverMay(ctx, verb, res)
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Errorf("the server's ServiceAccount may %s %s: %v, want %v", verb, res, got, want)
					}
				}
			}
		})
	}
}

// servicesRule returns the first services object a list of RBAC rules
// names, or "".
func servicesRule(rules []any) string {
	for _, r := range rules {
		res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
		for _, name := range res {
			if base, _, _ := strings.Cut(name, "/"); slices.Contains([]string{"services", "endpointslices", "serviceexports", "serviceimports", "*"}, base) {
				return name
			}
		}
	}
	return ""
}

// applyRBAC applies the ServiceAccounts, roles and bindings of a rendering
// to cluster 1 and deletes them when the test ends.
func applyRBAC(t *testing.T, ctx context.Context, objs []*unstructured.Unstructured) {
	t.Helper()
	var b bytes.Buffer
	for _, u := range objs {
		if slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, u.GetKind()) {
			b.WriteString("---\n" + toYAML(u))
		}
	}
	text := b.String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, stderr, err := env.KubectlWithInput(ctx, bytes.NewBufferString(text), 1, admin, "delete", "--ignore-not-found", "-f", "-"); err != nil {
			t.Errorf("deleting the RBAC: %v\n%s%s", err, out, stderr)
		}
	})
	if out, stderr, err := env.KubectlWithInput(ctx, bytes.NewBufferString(text), 1, admin, "apply", "-f", "-"); err != nil {
		t.Fatalf("applying the RBAC: %v\n%s%s", err, out, stderr)
	}
}

// serverMay asks cluster 1 whether the server's ServiceAccount may do verb
// on resource (group/resource[/subresource]) in every namespace.
func serverMay(ctx context.Context, verb, resource string) (bool, error) {
	group, rest, _ := strings.Cut(resource, "/")
	res, sub, _ := strings.Cut(rest, "/")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   serviceaccount.MakeUsername(hostServicesNamespace, "kilo-mesh-apiserver"),
		Groups: append(serviceaccount.MakeGroupNames(hostServicesNamespace), "system:authenticated"),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: res, Subresource: sub,
		},
	}}
	answer, err := env.Client(1, admin).AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview %s %s: %w", verb, resource, err)
	}
	return answer.Status.Allowed, nil
}
