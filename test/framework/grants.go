package framework

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// ClusterMeshGrantGVR is the cluster-scoped grant resource of the mesh server.
var ClusterMeshGrantGVR = schema.GroupVersionResource{Group: MeshGroup, Version: MeshVersion, Resource: "clustermeshgrants"}

// TestNetworks are the networks the environment's meshes declare: the test
// manifests and sample nodes use 10/8, 192.168/16 and fd00::/8 only.
var TestNetworks = []string{"10.0.0.0/8", "192.168.0.0/16", "fd00::/8"}

// LoopbackServers are where the environment's member API servers listen.
var LoopbackServers = []string{"127.0.0.0/8"}

// TenantGrant is the grant an administrator gives tenants of this
// environment: their meshes may route the test networks through the host
// cluster, and name member servers on loopback.
func TenantGrant(namespaces ...string) meshv1alpha1.ClusterMeshGrantSpec {
	return meshv1alpha1.ClusterMeshGrantSpec{
		Namespaces:     namespaces,
		MemberNetworks: TestNetworks,
		LocalNetworks:  TestNetworks,
		MemberServers:  LoopbackServers,
	}
}

// ApplyGrant creates or replaces the ClusterMeshGrant name, as an admin:
// with no grant, meshes of tenants without Peer rights on the host cluster
// cannot have a local cluster.
func (e *Env) ApplyGrant(ctx context.Context, name string, spec meshv1alpha1.ClusterMeshGrantSpec) error {
	g := &meshv1alpha1.ClusterMeshGrant{
		TypeMeta:   metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMeshGrant"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       spec,
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(g)
	if err != nil {
		return err
	}
	_, err = e.Dynamic(HostCluster, UserAdmin).Resource(ClusterMeshGrantGVR).Apply(ctx, name, &unstructured.Unstructured{Object: obj},
		metav1.ApplyOptions{FieldManager: "kilo-mesh-e2e", Force: true})
	if err != nil {
		return fmt.Errorf("applying ClusterMeshGrant %s: %w", name, err)
	}
	return nil
}

// DeleteGrant deletes the ClusterMeshGrant name.
func (e *Env) DeleteGrant(ctx context.Context, name string) error {
	if err := e.Dynamic(HostCluster, UserAdmin).Resource(ClusterMeshGrantGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting ClusterMeshGrant %s: %w", name, err)
	}
	return nil
}
