//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The controllers of kube-controller-manager, which every cluster runs,
// work on a host cluster that serves the mesh group.

// TestNamespaceDeletion: deleting a namespace holding no mesh finishes. The
// namespace controller deletes every namespaced resource of every served
// group, the mesh group included, accepting protobuf.
func TestNamespaceDeletion(t *testing.T) {
	ns := namespace(t, "plain")
	kubectl(t, admin, "delete", "namespace", ns, "--timeout=90s")
	if _, err := env.Client(framework.HostCluster, admin).CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the namespace is still there after kubectl delete: %v", err)
	}
}

// TestOwnerReferences: the garbage collector honours owner references to
// meshes. The server itself creates no object with owner references: its
// Peers are cluster-scoped objects on other clusters, removed by the mesh's
// finalizer, and its Events have none. So these are what users make
// dependents of a mesh, under every propagation policy, and a dependent of
// a mesh that never existed, which the collector looks up through the
// aggregated API.
func TestOwnerReferences(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "owned")
	configMaps := env.Client(framework.HostCluster, admin).CoreV1().ConfigMaps(ns)
	meshes := env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR).Namespace(ns)
	dependent := func(t *testing.T, name string, owner metav1.OwnerReference) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{owner}}}
		if _, err := configMaps.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ownerRef := func(name string, uid types.UID) metav1.OwnerReference {
		block := true
		return metav1.OwnerReference{APIVersion: framework.MeshGroup + "/" + framework.MeshVersion, Kind: "ClusterMesh", Name: name, UID: uid, BlockOwnerDeletion: &block}
	}
	gone := func(get func() error) func() error {
		return func() error {
			if err := get(); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		}
	}

	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan} {
		t.Run(string(policy), func(t *testing.T) {
			name := "owner-" + strings.ToLower(string(policy))
			if _, stderr, err := kubectlIn(t, admin, manifest(t, "valid.yaml", name), "-n", ns, "create", "-f", "-"); err != nil {
				t.Fatalf("create: %v\n%s", err, stderr)
			}
			owner, err := meshes.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dependent(t, name, ownerRef(name, owner.GetUID()))
			if err := meshes.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
				t.Fatal(err)
			}
			framework.EventuallyT(t, rcConverge, "the mesh gone", gone(func() error {
				_, err := meshes.Get(ctx, name, metav1.GetOptions{})
				return err
			}))
			getDependent := func() error {
				_, err := configMaps.Get(ctx, name, metav1.GetOptions{})
				return err
			}
			if policy != metav1.DeletePropagationOrphan {
				framework.EventuallyT(t, rcConverge, "the dependent collected", gone(getDependent))
				return
			}
			cm, err := configMaps.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the orphan was deleted: %v", err)
			}
			if slices.ContainsFunc(cm.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() }) {
				t.Errorf("the orphan still names its owner: %+v", cm.OwnerReferences)
			}
		})
	}

	t.Run("owner that never existed", func(t *testing.T) {
		dependent(t, "dangling", ownerRef("ghost", types.UID(uuid.NewUUID())))
		framework.EventuallyT(t, rcConverge, "the dangling dependent collected", gone(func() error {
			_, err := configMaps.Get(ctx, "dangling", metav1.GetOptions{})
			return err
		}))
	})
}
