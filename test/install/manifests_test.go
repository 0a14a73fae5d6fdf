//go:build e2e

package install

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestDeployManifests renders artifacts/deploy with kubectl's kustomize and
// applies the result with --dry-run=server to a real kube-apiserver: every
// object is valid there, the image is named once (kustomize images:), and
// the default install needs nothing from outside (no cert-manager, no
// external etcd, no mounted certificate).
func TestDeployManifests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := framework.DeployManifest("")
	if err != nil {
		t.Fatal(err)
	}
	rendered, stderr, err := env.Kubectl(ctx, framework.HostCluster, admin, "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, stderr)
	}
	for _, banned := range []string{"cert-manager", "--tls-cert-file", "--etcd-servers", "kilo-mesh-apiserver:latest"} {
		if strings.Contains(rendered, banned) {
			t.Errorf("the default install mentions %q", banned)
		}
	}
	kinds := map[string]int{}
	var images []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		data, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		kinds[obj.GetKind()]++
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			images = append(images, c.(map[string]any)["image"].(string))
		}
		if obj.GetKind() == "StatefulSet" {
			if replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); replicas != 1 {
				t.Errorf("StatefulSet with %d replicas, want 1", replicas)
			}
			if claims, _, _ := unstructured.NestedSlice(obj.Object, "spec", "volumeClaimTemplates"); len(claims) != 1 {
				t.Errorf("StatefulSet with %d volumeClaimTemplates, want 1", len(claims))
			}
		}
	}
	if len(images) != 1 || images[0] != "ghcr.io/kilo-mesh/kilo-mesh-apiserver:v0.1.0" {
		t.Errorf("images %v, want the one from kustomization.yaml's images:", images)
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "Secret", "Service", "StatefulSet", "APIService", "Role", "ClusterRole"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s rendered", kind)
		}
	}
	// On cluster 1, where nothing of the server is installed, as on a new
	// cluster; only the namespace is created for real, or a dry run could
	// not check the objects in it.
	const fresh = 1
	if _, stderr, err := env.Kubectl(ctx, fresh, admin, "create", "namespace", "kilo-mesh-system"); err != nil && !strings.Contains(stderr, "AlreadyExists") {
		t.Fatalf("kubectl create namespace: %v\n%s", err, stderr)
	}
	out, stderr, err := env.KubectlWithInput(ctx, bytes.NewBufferString(rendered), fresh, admin,
		"apply", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s\n%s", err, out, stderr)
	}
	// Everything is new there but the namespace.
	if n, want := strings.Count(out, "created (server dry run)"), len(strings.Split(rendered, "\n---\n"))-1; n != want {
		t.Errorf("%d objects created in the dry run, want %d:\n%s", n, want, out)
	}
}
