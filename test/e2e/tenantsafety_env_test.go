//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// tsEnv adds the tenants' namespaces and meshes to the reconciler's environment.
type tsEnv struct {
	*rcEnv
}

func (ts *tsEnv) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := ts.env.NewNamespace(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func (ts *tsEnv) putSecret(t *testing.T, ns, name string, kubeconfig []byte) {
	t.Helper()
	secrets := ts.kube(framework.HostCluster).CoreV1().Secrets(ns)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	if _, err := secrets.Create(context.Background(), s, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(context.Background(), s, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
}

// fakeMemberMesh starts a fake member in mode and creates, in a namespace
// of its own, mesh name between the local cluster (<pod>.0.0/16 and
// <wg>.0.0/16) and the fake member ("far", the next /16s).
func (ts *tsEnv) fakeMemberMesh(t *testing.T, mode framework.FakeMemberMode, name, pod, wg string) (*framework.FakeMember, string) {
	t.Helper()
	fm, err := framework.StartFakeMember(mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fm.Close)
	kc, err := fm.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	ns := ts.namespace(t, name)
	ts.putSecret(t, ns, "fake", kc)
	next := func(p string) string { // 10.111 -> 10.112.0.0/16
		var a, b int
		fmt.Sscanf(p, "%d.%d", &a, &b)
		return fmt.Sprintf("%d.%d.0.0/16", a, b+1)
	}
	ts.create(t, ns, ts.meshYAML(name, pod, wg, entryYAML("far", "fake", next(pod), next(wg))))
	return fm, ns
}

// meshYAML is a mesh whose local entry declares <pod>.0.0/16 and
// <wg>.0.0/16, followed by more entries.
func (ts *tsEnv) meshYAML(name, pod, wg, entries string) string {
	return fmt.Sprintf(`apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: %s
spec:
  clusters:
  - name: home
    local: true
    podCIDRs: ["%s.0.0/16"]
    wireguardCIDR: %s.0.0/16
%s`, name, pod, wg, entries)
}

func entryYAML(name, secret, pod, wg string) string {
	return fmt.Sprintf("  - name: %s\n    kubeconfigSecretRef: {name: %s}\n    podCIDRs: [%q]\n    wireguardCIDR: %s\n", name, secret, pod, wg)
}

func (ts *tsEnv) tryCreate(t *testing.T, ns, manifest string) error {
	t.Helper()
	b, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	_, err = ts.dyn(framework.HostCluster).Resource(framework.ClusterMeshGVR).Namespace(ns).Create(context.Background(), toUnstructured(obj), metav1.CreateOptions{})
	return err
}

func (ts *tsEnv) create(t *testing.T, ns, manifest string) {
	t.Helper()
	if err := ts.tryCreate(t, ns, manifest); err != nil {
		t.Fatalf("creating a ClusterMesh in %s: %v", ns, err)
	}
}

func (ts *tsEnv) get(t *testing.T, ns, name string) *meshv1alpha1.ClusterMesh {
	t.Helper()
	u, err := ts.dyn(framework.HostCluster).Resource(framework.ClusterMeshGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ClusterMesh %s/%s: %v", ns, name, err)
	}
	mesh := &meshv1alpha1.ClusterMesh{}
	fromUnstructured(t, u.Object, mesh)
	return mesh
}

func (ts *tsEnv) delete(t *testing.T, ns, name string) {
	t.Helper()
	err := ts.dyn(framework.HostCluster).Resource(framework.ClusterMeshGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s/%s: %v", ns, name, err)
	}
}

// plan is the plan view of a mesh, as YAML.
func (ts *tsEnv) plan(t *testing.T, ns, name string) string {
	t.Helper()
	raw, err := ts.kube(framework.HostCluster).Discovery().RESTClient().Get().
		AbsPath("/apis", framework.MeshGroup, framework.MeshVersion, "namespaces", ns, "clustermeshes", name, "plan").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("plan of %s/%s: %v", ns, name, err)
	}
	return string(raw)
}

func (ts *tsEnv) events(t *testing.T, ns string) []corev1.Event {
	t.Helper()
	list, err := ts.kube(framework.HostCluster).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// denyFinalizer makes a ValidatingAdmissionPolicy refuse any update that
// adds the server's finalizer to the mesh of that name; the server enforces
// it only once its admission has compiled it, which the caller awaits.
func (ts *tsEnv) denyFinalizer(t *testing.T, mesh string) {
	t.Helper()
	policy := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-no-mesh-finalizer
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["mesh.kilo.squat.ai"]
      apiVersions: ["*"]
      operations: ["UPDATE"]
      resources: ["clustermeshes"]
  matchConditions:
  - name: this-mesh
    expression: "object.metadata.name == '%s'"
  validations:
  - expression: "!has(object.metadata.finalizers) || !object.metadata.finalizers.exists(f, f == '%s') || (has(oldObject.metadata.finalizers) && oldObject.metadata.finalizers.exists(f, f == '%s'))"
    message: "e2e: the finalizer may not be added back"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-no-mesh-finalizer
spec:
  policyName: e2e-no-mesh-finalizer
  validationActions: [Deny]
`, mesh, reconciler.Finalizer, reconciler.Finalizer)
	if _, stderr, err := ts.env.KubectlWithInput(context.Background(), strings.NewReader(policy), framework.HostCluster, framework.UserAdmin, "apply", "-f", "-"); err != nil {
		t.Fatalf("applying the policy: %v\n%s", err, stderr)
	}
	t.Cleanup(func() {
		_, _, _ = ts.env.Kubectl(context.Background(), framework.HostCluster, framework.UserAdmin, "delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "e2e-no-mesh-finalizer")
	})
}

// clusterError is nil once the status of cluster in mesh carries want in
// its lastError.
func clusterError(mesh *meshv1alpha1.ClusterMesh, cluster, want string) error {
	for _, cs := range mesh.Status.Clusters {
		if cs.Name == cluster {
			if strings.Contains(cs.LastError, want) {
				return nil
			}
			return fmt.Errorf("cluster %s: lastError %q, want %q", cluster, cs.LastError, want)
		}
	}
	return fmt.Errorf("no status of cluster %s yet", cluster)
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
