//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// hostedMesh joins the host, where the server runs, and cluster two, under
// a ClusterMeshGrant.
const hostedMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: hosted
spec:
  clusters:
  - name: host
    local: true
    podCIDRs: ["10.60.0.0/16"]
    wireguardCIDR: 10.61.0.0/16
  - name: two
    kubeconfigSecretRef: {name: two-kubeconfig}
    podCIDRs: ["10.12.0.0/16"]
    wireguardCIDR: 10.62.0.0/16
`

// TestShutdownAfterWork stops, with SIGTERM, a server that has done real
// work (a services mesh of two members with an import, a mesh of the host
// under a grant) while clients watch it through the aggregator, as the
// controller manager's garbage collector and quota do from half a minute
// after the group appears. It must exit within framework.ShutdownBound
// (Stop fails otherwise, with what held it), cleanly and with the
// reconciler's Lease released.
func TestShutdownAfterWork(t *testing.T) {
	s := startServicesEnv(t)
	env := s.env
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	shop := s.namespace(t, 1, 2)
	s.backend(t, 1, shop, "cart", []string{"10.11.1.10"}, nil)
	s.export(t, 1, shop, "cart")
	s.waitImported(t, 2, shop, "cart")

	ns, err := env.NewNamespace(ctx, "hosted")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.ApplyGrant(ctx, ns, framework.TenantGrant(ns)); err != nil {
		t.Fatal(err)
	}
	if _, err := env.CreateKubeconfigSecret(ctx, ns, "two-kubeconfig", 2, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, hostedMesh, "-n", ns, "create", "-f", "-")
	meshes := env.Dynamic(framework.HostCluster, framework.UserAdmin).Resource(framework.ClusterMeshGVR)
	framework.EventuallyT(t, svcConverge, "the hosted mesh's Peers applied", func() error {
		u, err := meshes.Namespace(ns).Get(ctx, "hosted", metav1.GetOptions{})
		if err != nil {
			return err
		}
		m := &meshv1alpha1.ClusterMesh{}
		fromUnstructured(t, u.Object, m)
		return wantCondition(m, meshv1alpha1.ConditionPeersApplied, metav1.ConditionTrue, "")
	})

	for _, gvr := range []schema.GroupVersionResource{framework.ClusterMeshGVR, framework.ClusterMeshGrantGVR} {
		w, err := env.Dynamic(framework.HostCluster, framework.UserAdmin).Resource(gvr).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("watching %s: %v", gvr.Resource, err)
		}
		defer w.Stop()
	}

	stopped := time.Now()
	if err := s.server.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("exited %s after SIGTERM", time.Since(stopped).Round(10*time.Millisecond))
	if err := s.server.ExitErr(); err != nil {
		t.Errorf("the server did not exit cleanly: %v\n%s", err, s.server.LogTail(40))
	}
	lease, err := env.Client(framework.HostCluster, framework.UserAdmin).CoordinationV1().Leases(reconciler.DefaultLeaseNamespace).
		Get(ctx, reconciler.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the stopped server still holds the Lease (%s): a standby would wait for it to expire", *h)
	}
}
