package clustermeshgrant_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistrytest "k8s.io/apiserver/pkg/registry/generic/testing"
	"k8s.io/apiserver/pkg/registry/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apiserver"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermeshgrant"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework/storagetest"
)

// newStorage builds the real storage on the product's own embedded etcd,
// without the watch cache (see the ClusterMesh storage tests).
func newStorage(t *testing.T) *clustermeshgrant.REST {
	t.Helper()
	opts := apiserver.NewOptions().RecommendedOptions.Etcd
	opts.EnableWatchCache = false
	grants, err := clustermeshgrant.NewREST(apiserver.Scheme, storagetest.RESTOptions(t, opts))
	if err != nil {
		t.Fatalf("building storage: %v", err)
	}
	t.Cleanup(grants.Destroy)
	return grants
}

func validGrant() *meshv1alpha1.ClusterMeshGrant {
	return &meshv1alpha1.ClusterMeshGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: meshv1alpha1.ClusterMeshGrantSpec{
			Namespaces:     []string{"tenant-a"},
			MemberNetworks: []string{"10.52.0.0/16"},
			LocalNetworks:  []string{"10.42.0.0/16"},
		},
	}
}

func TestStorage(t *testing.T) {
	// Every subtest has its own storage: cluster-scoped names would collide.
	test := func(t *testing.T) *genericregistrytest.Tester {
		return genericregistrytest.New(t, newStorage(t).Store).ClusterScope()
	}
	t.Run("create", func(t *testing.T) {
		g := validGrant()
		g.Name, g.GenerateName = "", "team-"
		invalid := validGrant()
		invalid.Spec.MemberNetworks = []string{"0.0.0.0/0"}
		test(t).TestCreate(g, invalid)
	})
	t.Run("update", func(t *testing.T) {
		test(t).TestUpdate(validGrant(),
			func(obj runtime.Object) runtime.Object {
				g := obj.(*meshv1alpha1.ClusterMeshGrant)
				g.Spec.MemberNetworks = []string{"10.52.0.0/17"}
				return g
			},
			func(obj runtime.Object) runtime.Object {
				g := obj.(*meshv1alpha1.ClusterMeshGrant)
				g.Spec.Namespaces, g.Spec.NamespaceSelector = nil, nil
				return g
			},
		)
	})
	t.Run("delete", func(t *testing.T) { test(t).ReturnDeletedObject().TestDelete(validGrant()) })
	t.Run("get", func(t *testing.T) { test(t).TestGet(validGrant()) })
	t.Run("list", func(t *testing.T) { test(t).TestList(validGrant()) })
	t.Run("watch", func(t *testing.T) {
		test(t).TestWatch(validGrant(),
			[]labels.Set{},
			[]labels.Set{{"team": "nobody"}},
			[]fields.Set{{"metadata.name": "team-a"}},
			[]fields.Set{{"metadata.name": "other"}},
		)
	})
}

// TestGenerationFollowsSpec: a narrowed grant is a new generation, a
// relabelled one is not.
func TestGenerationFollowsSpec(t *testing.T) {
	grants := newStorage(t)
	ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
	obj, err := grants.Create(ctx, validGrant(), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := obj.(*meshv1alpha1.ClusterMeshGrant)
	if g.Generation != 1 || g.Namespace != "" {
		t.Fatalf("created: generation %d, namespace %q", g.Generation, g.Namespace)
	}
	update := func(mutate func(*meshv1alpha1.ClusterMeshGrant)) *meshv1alpha1.ClusterMeshGrant {
		t.Helper()
		next := g.DeepCopy()
		mutate(next)
		obj, _, err := grants.Update(ctx, next.Name, rest.DefaultUpdatedObjectInfo(next), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*meshv1alpha1.ClusterMeshGrant)
	}
	g = update(func(g *meshv1alpha1.ClusterMeshGrant) { g.Labels = map[string]string{"reviewed": "yes"} })
	if g.Generation != 1 {
		t.Errorf("a label moved the generation to %d", g.Generation)
	}
	g = update(func(g *meshv1alpha1.ClusterMeshGrant) { g.Spec.MemberNetworks = []string{"10.52.1.0/24"} })
	if g.Generation != 2 {
		t.Errorf("a narrowed grant has generation %d, want 2", g.Generation)
	}
}
