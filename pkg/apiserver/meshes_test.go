package apiserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermesh"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework/storagetest"
)

// TestMeshInformer: the in-process informer sees meshes of every namespace
// as they are created, updated and deleted through the real storage.
func TestMeshInformer(t *testing.T) {
	meshes, _, err := clustermesh.NewREST(Scheme, storagetest.RESTOptions(t, NewOptions().RecommendedOptions.Etcd))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(meshes.Destroy)

	informer := newMeshInformer(meshes)
	events := make(chan string, 10)
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { events <- "add " + obj.(*meshv1alpha1.ClusterMesh).Namespace },
		UpdateFunc: func(_, obj interface{}) { events <- "update " + obj.(*meshv1alpha1.ClusterMesh).Namespace },
		DeleteFunc: func(obj interface{}) { events <- "delete" },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	for _, ns := range []string{"a", "b"} {
		m := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns}, Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{Name: "x", Local: true, PodCIDRs: []string{"10.1.0.0/16"}, WireguardCIDR: "10.2.0.0/16"},
			{Name: "y", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "y"}, PodCIDRs: []string{"10.3.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
		}}}
		if _, err := meshes.Create(genericapirequest.WithNamespace(ctx, ns), m, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := meshes.Delete(genericapirequest.WithNamespace(ctx, "a"), "m", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 3 {
		select {
		case e := <-events:
			got = append(got, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("events so far %v", got)
		}
	}
	if fmt.Sprint(got) != "[add a add b delete]" {
		t.Errorf("events %v", got)
	}
}
