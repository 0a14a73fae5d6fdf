package grants

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// idleInformer is an informer that is never run: the test fills its store.
func idleInformer(example runtime.Object) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return nil, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewEmptyWatch(), nil },
	}
	return cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
}

// TestChangedNamespaces: a grant's change reaches the namespaces it covered
// before and after, by name and by selector, and nothing else.
func TestChangedNamespaces(t *testing.T) {
	namespaces := idleInformer(&corev1.Namespace{})
	for name, l := range map[string]map[string]string{"a": nil, "net-1": {"team": "net"}, "net-2": {"team": "net"}, "web": {"team": "web"}} {
		if err := namespaces.GetStore().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}); err != nil {
			t.Fatal(err)
		}
	}
	x, err := NewIndex(idleInformer(&meshv1alpha1.ClusterMeshGrant{}), namespaces)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	x.AddChangeHandler(func(ns string) { seen = append(seen, ns) })
	check := func(name string, want ...string) {
		t.Helper()
		slices.Sort(seen)
		if !slices.Equal(seen, want) {
			t.Errorf("%s: notified %v, want %v", name, seen, want)
		}
		seen = nil
	}
	byName := grant("g", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"a", "gone"}})
	bySelector := grant("g", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"a"},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "net"}}})

	x.grantChanged(nil, byName)
	check("created", "a", "gone")
	x.grantChanged(byName, bySelector)
	check("widened to a selector", "a", "gone", "net-1", "net-2")
	x.grantChanged(cache.DeletedFinalStateUnknown{Key: "g", Obj: bySelector}, nil)
	check("deleted, seen as a tombstone", "a", "net-1", "net-2")

	web := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "web"}}}
	relabelled := web.DeepCopy()
	relabelled.Labels["team"] = "net"
	x.namespaceChanged(web, web.DeepCopy())
	check("namespace updated, same labels")
	x.namespaceChanged(web, relabelled)
	check("namespace relabelled", "web")
}
