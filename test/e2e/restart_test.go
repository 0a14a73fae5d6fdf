//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestEmbeddedEtcdKeepsDataAcrossRestarts restarts the registered server on
// its data directory: what was stored is still there.
func TestEmbeddedEtcdKeepsDataAcrossRestarts(t *testing.T) {
	ns := namespace(t, "restart")
	if _, stderr, err := kubectlIn(t, admin, manifest(t, "valid.yaml", "kept"), "-n", ns, "create", "-f", "-"); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		t.Fatalf("restart: %v\n%s", err, server.LogTail(40))
	}
	if out := kubectl(t, admin, "-n", ns, "get", "cmesh", "kept", "-o", "name"); strings.TrimSpace(out) != "clustermesh.mesh.kilo.squat.ai/kept" {
		t.Errorf("after restart: %q", out)
	}
}

// TestExternalEtcd runs a second server on the environment's etcd
// (--etcd-servers) and talks to it directly, as the aggregator would.
func TestExternalEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	external, err := env.StartMeshServer(ctx, framework.MeshServerOptions{ExternalEtcd: true, SkipRegistration: true})
	if err != nil {
		t.Fatal(err)
	}
	defer external.Stop()
	if !strings.Contains(strings.Join(external.Args, " "), "--etcd-servers="+env.EtcdURL) {
		t.Fatalf("not on the external etcd: %v", external.Args)
	}
	if strings.Contains(external.Logs(), "Embedded etcd is ready") {
		t.Fatal("the external-etcd server started an embedded etcd")
	}
	client, err := dynamic.NewForConfig(external.DirectRESTConfig(admin))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest(t, "valid.yaml", "external")), &obj.Object); err != nil {
		t.Fatal(err)
	}
	res := client.Resource(framework.ClusterMeshGVR).Namespace("default")
	if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create on the external-etcd server: %v", err)
	}
	if _, err := res.Get(ctx, "external", metav1.GetOptions{}); err != nil {
		t.Fatalf("get: %v", err)
	}
}
