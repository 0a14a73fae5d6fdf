//go:build integration

package member_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

var serviceImportGVR = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceimports"}

// TestMemberArtifacts installs the member identity on real kube-apiservers
// the two shipped ways, kustomize and the member chart, each first with its
// base rights (the default), then with the services rights, then without
// them again: each installs the mcs-api CRDs (Established), and the
// kube-apiserver's RBAC authorizer lets the identity do exactly its rights
// at each step (framework.MemberRightsProblems), in any namespace; its own
// token lists ServiceImports only with the services rights and is always
// refused Secrets.
func TestMemberArtifacts(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 2})
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(root, "artifacts", "charts", "kilo-mesh-member")
	kubectl := func(args ...string) func(context.Context, int) (string, error) {
		return func(ctx context.Context, cluster int) (string, error) {
			_, stderr, err := env.Kubectl(ctx, cluster, framework.UserAdmin, args...)
			return stderr, err
		}
	}
	helm := func(args ...string) func(context.Context, int) (string, error) {
		return func(ctx context.Context, cluster int) (string, error) {
			_, stderr, err := env.Helm(ctx, cluster, framework.UserAdmin, args...)
			return stderr, err
		}
	}
	type step struct {
		name     string
		install  func(context.Context, int) (string, error)
		services bool
	}
	for _, way := range []struct {
		name    string
		cluster int
		steps   []step
	}{
		{"kustomize", 0, []step{
			{"kubectl apply -k artifacts/member", kubectl("apply", "-k", filepath.Join(root, "artifacts", "member")), false},
			{"kubectl apply -k artifacts/overlays/member-services", kubectl("apply", "-k", filepath.Join(root, "artifacts", "overlays", "member-services")), true},
			{"kubectl delete -f artifacts/components/member-services/rbac.yaml", kubectl("delete", "-f", filepath.Join(root, "artifacts", "components", "member-services", "rbac.yaml")), false},
		}},
		{"helm", 1, []step{
			{"helm install the member chart", helm("install", "kilo-mesh-member", chart, "--namespace", "default"), false},
			{"helm upgrade --set services.enabled=true", helm("upgrade", "kilo-mesh-member", chart, "--namespace", "default", "--set", "services.enabled=true"), true},
			{"helm upgrade --set services.enabled=false", helm("upgrade", "kilo-mesh-member", chart, "--namespace", "default", "--set", "services.enabled=false"), false},
		}},
	} {
		t.Run(way.name, func(t *testing.T) {
			for _, s := range way.steps {
				t.Run(s.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					defer cancel()
					if stderr, err := s.install(ctx, way.cluster); err != nil {
						t.Fatalf("%v\n%s", err, stderr)
					}
					if err := env.WaitMCSCRDsEstablished(ctx, way.cluster); err != nil {
						t.Fatal(err)
					}
					problems, err := env.MemberRightsProblems(ctx, way.cluster, s.services)
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range problems {
						t.Error(p)
					}
					checkToken(ctx, t, env, way.cluster, s.services)
				})
			}
		})
	}
	t.Run("the chart refuses a value it does not have", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, stderr, err := env.Helm(ctx, 1, framework.UserAdmin, "template", "m", chart, "--set", "service.enabled=true")
		if err == nil || !strings.Contains(stderr, "service") {
			t.Errorf("a misspelt services.enabled was taken (%v): %s", err, stderr)
		}
	})
}

// checkToken uses a real token of the identity: ServiceImports are listed
// with the services rights and refused without, Secrets always refused.
func checkToken(ctx context.Context, t *testing.T, env *framework.Env, cluster int, services bool) {
	t.Helper()
	kubeconfig, err := env.MemberKubeconfig(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dynamic.NewForConfigOrDie(cfg).Resource(serviceImportGVR).List(ctx, metav1.ListOptions{})
	if services && err != nil || !services && !apierrors.IsForbidden(err) {
		t.Errorf("listing ServiceImports with the identity's token (services rights: %v): %v", services, err)
	}
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets with the identity's token: %v, want Forbidden", err)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(ctx, member.IdentityNamespace, metav1.GetOptions{}); err != nil {
		t.Errorf("reading namespace %s with the identity's token: %v", member.IdentityNamespace, err)
	}
}
