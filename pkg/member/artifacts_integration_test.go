//go:build integration

package member_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// memberRights is what the member identity may do, written out here rather
// than taken from member.Rules, so that a widened role fails this test.
var memberRights = map[string][]string{
	"/nodes":                               {"get", "list", "watch"},
	"/namespaces":                          {"get", "list", "watch"},
	"kilo.squat.ai/peers":                  {"get", "list", "watch", "create", "update", "patch", "delete"},
	"/services":                            {"get", "list", "watch", "create", "update", "delete"},
	"discovery.k8s.io/endpointslices":      {"get", "list", "watch", "create", "update", "delete"},
	"multicluster.x-k8s.io/serviceexports": {"get", "list", "watch"},
	"multicluster.x-k8s.io/serviceexports/status": {"update"},
	"multicluster.x-k8s.io/serviceimports":        {"get", "list", "watch", "create", "update", "delete"},
	"multicluster.x-k8s.io/serviceimports/status": {"update"},
	// Nothing of these: Secrets, workloads, writes to what users own,
	// and every way to widen its own rights.
	"/secrets":                               nil,
	"/pods":                                  nil,
	"/configmaps":                            nil,
	"/endpoints":                             nil,
	"/services/status":                       nil,
	"/nodes/status":                          nil,
	"/serviceaccounts":                       nil,
	"/serviceaccounts/token":                 nil,
	"/users":                                 nil,
	"rbac.authorization.k8s.io/clusterroles": nil,
	"rbac.authorization.k8s.io/clusterrolebindings":              nil,
	"rbac.authorization.k8s.io/roles":                            nil,
	"apiextensions.k8s.io/customresourcedefinitions":             nil,
	"admissionregistration.k8s.io/mutatingwebhookconfigurations": nil,
}

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "impersonate", "escalate", "bind"}

var serviceImportGVR = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceimports"}

// TestMemberArtifacts installs the member identity on real kube-apiservers
// the two shipped ways, kustomize's artifacts/member and the member chart:
// each installs the mcs-api CRDs (Established), and the kube-apiserver's
// RBAC authorizer lets the identity do exactly memberRights, in any
// namespace; its own token reads ServiceImports and is refused Secrets.
func TestMemberArtifacts(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 2})
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	installs := []struct {
		name    string
		cluster int
		install func(ctx context.Context, cluster int) (string, error)
	}{
		{"kubectl apply -k artifacts/member", 0, func(ctx context.Context, cluster int) (string, error) {
			_, stderr, err := env.Kubectl(ctx, cluster, framework.UserAdmin, "apply", "-k", filepath.Join(root, "artifacts", "member"))
			return stderr, err
		}},
		{"helm install the member chart", 1, func(ctx context.Context, cluster int) (string, error) {
			_, stderr, err := env.Helm(ctx, cluster, framework.UserAdmin, "install", "kilo-mesh-member",
				filepath.Join(root, "artifacts", "charts", "kilo-mesh-member"), "--namespace", "default")
			return stderr, err
		}},
	}
	for _, in := range installs {
		t.Run(in.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if stderr, err := in.install(ctx, in.cluster); err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if err := env.WaitMCSCRDsEstablished(ctx, in.cluster); err != nil {
				t.Fatal(err)
			}
			checkRights(ctx, t, env.Client(in.cluster, framework.UserAdmin))
			checkToken(ctx, t, env, in.cluster)
		})
	}
}

// checkRights asks the kube-apiserver, for every verb on every resource of
// memberRights, whether the identity may, cluster-wide and in a namespace.
func checkRights(ctx context.Context, t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	sars := admin.AuthorizationV1().SubjectAccessReviews()
	for key, allowed := range memberRights {
		group, rest, _ := strings.Cut(key, "/")
		resource, sub, _ := strings.Cut(rest, "/")
		for _, verb := range allVerbs {
			for _, ns := range []string{"", "shop", "kube-system"} {
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User:   member.Username(),
					Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + member.Namespace, "system:authenticated"},
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: "any",
					},
				}}
				if verb == "list" || verb == "watch" || verb == "create" || verb == "deletecollection" {
					sar.Spec.ResourceAttributes.Name = ""
				}
				got, err := sars.Create(ctx, sar, metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("SubjectAccessReview %s %s in %q: %v", verb, key, ns, err)
				}
				if want := slices.Contains(allowed, verb); got.Status.Allowed != want {
					t.Errorf("%s %s in namespace %q: allowed %v, want %v (%s)", verb, key, ns, got.Status.Allowed, want, got.Status.Reason)
				}
			}
		}
	}
}

// checkToken uses a real token of the identity: the ServiceImports the CRD
// serves are listed, Secrets are refused.
func checkToken(ctx context.Context, t *testing.T, env *framework.Env, cluster int) {
	t.Helper()
	token, err := env.ServiceAccountToken(ctx, cluster, member.Namespace, member.ServiceAccount, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := env.KubeconfigFor(cluster, member.ServiceAccount, token)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamic.NewForConfigOrDie(cfg).Resource(serviceImportGVR).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing ServiceImports with the identity's token: %v", err)
	}
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets with the identity's token: %v, want Forbidden", err)
	}
}
