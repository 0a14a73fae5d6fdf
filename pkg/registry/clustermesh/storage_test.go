package clustermesh_test

import (
	"context"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistrytest "k8s.io/apiserver/pkg/registry/generic/testing"
	"k8s.io/apiserver/pkg/registry/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apiserver"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermesh"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework/storagetest"
)

// newStorage builds the real storage, as the server's defaults configure
// it, on the product's own embedded etcd; only without the watch cache,
// which answers "storage is (re)initializing" until its first list, while
// the generic registry tester uses the store as soon as it exists.
func newStorage(t *testing.T) (*clustermesh.REST, *clustermesh.StatusREST) {
	t.Helper()
	opts := apiserver.NewOptions().RecommendedOptions.Etcd
	opts.EnableWatchCache = false
	meshes, status, err := clustermesh.NewREST(apiserver.Scheme, storagetest.RESTOptions(t, opts))
	if err != nil {
		t.Fatalf("building storage: %v", err)
	}
	t.Cleanup(meshes.Destroy)
	return meshes, status
}

// testNamespace is the namespace the generic registry tester works in.
const testNamespace = "test"

func validMesh() *meshv1alpha1.ClusterMesh {
	return &meshv1alpha1.ClusterMesh{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: testNamespace},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{Name: "eu", Local: true, PodCIDRs: []string{"10.42.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
			{Name: "us", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "us"},
				PodCIDRs: []string{"10.52.0.0/16"}, WireguardCIDR: "10.5.0.0/16"},
		}},
	}
}

func TestCreate(t *testing.T) {
	meshes, _ := newStorage(t)
	test := genericregistrytest.New(t, meshes.Store)
	mesh := validMesh()
	mesh.Name = ""
	mesh.GenerateName = "prod-"
	invalid := validMesh()
	invalid.Spec.Clusters[1].PodCIDRs = []string{"10.42.0.0/16"}
	test.TestCreate(mesh, invalid)
}

func TestUpdate(t *testing.T) {
	meshes, _ := newStorage(t)
	test := genericregistrytest.New(t, meshes.Store)
	test.TestUpdate(validMesh(),
		func(obj runtime.Object) runtime.Object {
			m := obj.(*meshv1alpha1.ClusterMesh)
			m.Spec.Clusters[1].PersistentKeepalive = 25
			return m
		},
		func(obj runtime.Object) runtime.Object {
			m := obj.(*meshv1alpha1.ClusterMesh)
			m.Spec.Clusters[1].Local = true
			return m
		},
	)
}

func TestDelete(t *testing.T) {
	meshes, _ := newStorage(t)
	genericregistrytest.New(t, meshes.Store).ReturnDeletedObject().TestDelete(validMesh())
}

func TestGet(t *testing.T) {
	meshes, _ := newStorage(t)
	genericregistrytest.New(t, meshes.Store).TestGet(validMesh())
}

func TestList(t *testing.T) {
	meshes, _ := newStorage(t)
	genericregistrytest.New(t, meshes.Store).TestList(validMesh())
}

func TestWatch(t *testing.T) {
	meshes, _ := newStorage(t)
	genericregistrytest.New(t, meshes.Store).TestWatch(validMesh(),
		[]labels.Set{},
		[]labels.Set{{"team": "nobody"}},
		[]fields.Set{{"metadata.name": "prod"}},
		[]fields.Set{{"metadata.name": "other"}},
	)
}

// TestSpecAndStatusAreSeparate proves that a spec write cannot change status,
// a status write cannot change spec, and only spec changes bump the generation.
func TestSpecAndStatusAreSeparate(t *testing.T) {
	meshes, status := newStorage(t)
	ctx := genericapirequest.WithNamespace(context.Background(), testNamespace)
	obj, err := meshes.Create(ctx, validMesh(), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := obj.(*meshv1alpha1.ClusterMesh)
	if created.Generation != 1 {
		t.Fatalf("generation on create: want 1, got %d", created.Generation)
	}
	if created.Spec.Clusters[0].WireguardPort != meshv1alpha1.DefaultWireguardPort || created.Spec.Clusters[1].KubeconfigSecretRef.Key != "kubeconfig" {
		t.Fatalf("defaults not applied: %+v", created.Spec)
	}

	update := func(r rest.Updater, mutate func(*meshv1alpha1.ClusterMesh)) *meshv1alpha1.ClusterMesh {
		t.Helper()
		cur, err := meshes.Get(ctx, "prod", &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := cur.(*meshv1alpha1.ClusterMesh).DeepCopy()
		mutate(m)
		out, _, err := r.Update(ctx, "prod", rest.DefaultUpdatedObjectInfo(m), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out.(*meshv1alpha1.ClusterMesh)
	}
	readyStatus := meshv1alpha1.ClusterMeshStatus{ObservedGeneration: 1, Clusters: []meshv1alpha1.ClusterStatus{{Name: "eu", Reachable: true}}}

	t.Run("spec write drops status", func(t *testing.T) {
		got := update(meshes, func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[1].PersistentKeepalive = 25
			m.Status = readyStatus
		})
		if got.Generation != 2 {
			t.Errorf("generation after spec change: want 2, got %d", got.Generation)
		}
		if !apiequality.Semantic.DeepEqual(got.Status, meshv1alpha1.ClusterMeshStatus{}) {
			t.Errorf("status changed through the main resource: %+v", got.Status)
		}
	})
	t.Run("status write drops spec", func(t *testing.T) {
		got := update(status, func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[1].PersistentKeepalive = 99
			m.Status = readyStatus
		})
		if got.Generation != 2 {
			t.Errorf("generation after status change: want 2, got %d", got.Generation)
		}
		if got.Spec.Clusters[1].PersistentKeepalive != 25 {
			t.Errorf("spec changed through status: keepalive %d", got.Spec.Clusters[1].PersistentKeepalive)
		}
		if !apiequality.Semantic.DeepEqual(got.Status, readyStatus) {
			t.Errorf("status not written: %+v", got.Status)
		}
	})
	t.Run("metadata-only write keeps generation", func(t *testing.T) {
		got := update(meshes, func(m *meshv1alpha1.ClusterMesh) { m.Labels = map[string]string{"team": "net"} })
		if got.Generation != 2 {
			t.Errorf("generation after label change: want 2, got %d", got.Generation)
		}
		if got.Status.ObservedGeneration != 1 {
			t.Errorf("status lost on a spec-side write: %+v", got.Status)
		}
	})
}
