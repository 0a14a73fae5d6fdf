//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testNamespaceDeletion: deleting a tenant namespace that holds a mesh and
// its kubeconfig Secrets finishes, and the mesh's Peers leave every member
// cluster: kube-controller-manager's namespace controller deletes the mesh
// and the Secrets, in no set order, and the mesh's finalizer runs. With
// secretsFirst the Secrets are deleted before the namespace, the order that
// leaves the finalizer no kubeconfig to read.
func (c *rcTest) testNamespaceDeletion(secretsFirst bool) func(t *testing.T) {
	return func(t *testing.T) {
		ctx := context.Background()
		ns, err := c.rc.env.NewNamespace(ctx, "doomed")
		if err != nil {
			t.Fatal(err)
		}
		var secrets []string
		for i := 1; i < rcClusters; i++ {
			name := fmt.Sprintf("cluster-%d-kubeconfig", i)
			if _, err := c.rc.env.CreateKubeconfigSecret(ctx, ns, name, i, framework.UserAdmin); err != nil {
				t.Fatal(err)
			}
			secrets = append(secrets, name)
		}
		in := &rcEnv{env: c.rc.env, server: c.rc.server, ns: ns, keys: c.rc.keys}
		mesh := in.createMesh(t, "doomed")
		framework.EventuallyT(t, rcConverge, "Peers as the view shows", func() error { return in.allMatchView(t, mesh) })

		host := c.rc.kube(framework.HostCluster)
		if secretsFirst {
			for _, name := range secrets {
				if err := host.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			framework.EventuallyT(t, rcConverge, "the mesh without its Secrets", func() error {
				for _, cs := range in.mesh(t, mesh.Name).Status.Clusters {
					if cs.Name != clusterName(0) && !strings.Contains(cs.LastError, string(memberaccess.ErrSecretNotFound)) {
						return fmt.Errorf("%s: %q", cs.Name, cs.LastError)
					}
				}
				return nil
			})
		}

		start := time.Now()
		c.rc.env.KubectlT(t, framework.HostCluster, admin, "delete", "namespace", ns, "--timeout="+(2*rcDeletionTimeout).String())
		if _, err := host.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the namespace is still there after kubectl delete: %v", err)
		}
		t.Logf("namespace gone %s after the delete", time.Since(start).Round(time.Millisecond))
		// The finalizer released the mesh, so the namespace could go: its
		// Peers must be gone already, not left behind after a timeout.
		for i := range rcClusters {
			have, err := c.rc.peers(t, i, mesh.UID)
			if err != nil {
				t.Fatal(err)
			}
			if len(have) > 0 {
				t.Errorf("cluster %d still holds the mesh's Peers %v", i, slices.Sorted(maps.Keys(have)))
			}
		}
	}
}
