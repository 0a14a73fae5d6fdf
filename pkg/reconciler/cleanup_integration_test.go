//go:build integration

package reconciler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestCleanup: the one way out removes, on a real kube-apiserver, exactly
// what carries all of a mesh's labels, Peers and services objects in any
// namespace, found by a live list; a user's objects, and objects with only
// some of the labels, stay. A second call finds nothing.
func TestCleanup(t *testing.T) {
	h := newHarness(t, 2)
	if err := h.env.InstallMCSCRDs(h.ctx, 1); err != nil {
		t.Fatal(err)
	}
	ns, err := h.env.NewNamespaceOn(h.ctx, 1, "cleanup")
	if err != nil {
		t.Fatal(err)
	}
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "leaving", UID: "uid-cleanup"},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{Name: clusterName(1), KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: secretName(1)}}}}}
	h.mgr.Follow(mesh)
	framework.EventuallyT(t, converge, "cluster 1 usable", func() error {
		if st := h.mgr.Members(mesh)[clusterName(1)].State; !usable(st, true) {
			return fmt.Errorf("reason %q: %s", st.Reason, st.LastError)
		}
		return nil
	})

	own := planner.ManagedLabels(mesh.Namespace, mesh.Name, mesh.UID, "x")
	partial := map[string]string{planner.LabelMeshUID: string(mesh.UID), planner.LabelMeshNamespace: mesh.Namespace, planner.LabelMeshName: "other"}
	kube := h.env.Client(1, framework.UserAdmin)
	mcs := mcsclient.NewForConfigOrDie(h.env.RESTConfig(1, framework.UserAdmin))
	peers := h.env.Dynamic(1, framework.UserAdmin).Resource(kilov1alpha1.PeerResource)
	peer := func(name string, labels map[string]string) {
		h.createPeer(t, 1, &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.99.0.1/32"}}})
	}
	peer("cleanup-own", own)
	peer("cleanup-partial", partial)
	imp := func(name string, labels map[string]string) {
		si := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless, Ports: []mcsv1beta1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
		if _, err := mcs.MulticlusterV1beta1().ServiceImports(ns).Create(h.ctx, si, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	imp("cart", own)
	imp("mine", nil)
	svc := func(name string, labels map[string]string) {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
		if _, err := kube.CoreV1().Services(ns).Create(h.ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc("derived-cart", own)
	svc("forged", partial)
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "cart-x", Namespace: ns, Labels: own}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.11.1.1"}}}, Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}}
	if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(h.ctx, es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := &Reconciler{writer: newFairWriter()}
	mb := h.mgr.Members(mesh)[clusterName(1)]
	if res := r.cleanup(h.ctx, mesh, mb, written{peers: true, services: true}); !res.done() || res.found != 4 {
		t.Fatalf("cleanup found %d, more %v, err %v; want 4 found and done", res.found, res.more, res.err)
	}
	gone := func(what string, err error) {
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: %v, want it gone", what, err)
		}
	}
	kept := func(what string, err error) {
		if err != nil {
			t.Errorf("%s: %v, want it kept", what, err)
		}
	}
	_, err = peers.Get(h.ctx, "cleanup-own", metav1.GetOptions{})
	gone("the mesh's Peer", err)
	_, err = peers.Get(h.ctx, "cleanup-partial", metav1.GetOptions{})
	kept("a Peer with some of the labels", err)
	_, err = mcs.MulticlusterV1beta1().ServiceImports(ns).Get(h.ctx, "cart", metav1.GetOptions{})
	gone("the mesh's ServiceImport", err)
	_, err = mcs.MulticlusterV1beta1().ServiceImports(ns).Get(h.ctx, "mine", metav1.GetOptions{})
	kept("a user's ServiceImport", err)
	_, err = kube.CoreV1().Services(ns).Get(h.ctx, "derived-cart", metav1.GetOptions{})
	gone("the mesh's Service", err)
	_, err = kube.CoreV1().Services(ns).Get(h.ctx, "forged", metav1.GetOptions{})
	kept("a Service with some of the labels", err)
	_, err = kube.DiscoveryV1().EndpointSlices(ns).Get(h.ctx, "cart-x", metav1.GetOptions{})
	gone("the mesh's EndpointSlice", err)
	if err := peers.Delete(h.ctx, "cleanup-partial", metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}

	if res := r.cleanup(h.ctx, mesh, h.mgr.Members(mesh)[clusterName(1)], written{peers: true, services: true}); !res.done() || res.found != 0 {
		t.Errorf("a second cleanup found %d, more %v, err %v; want nothing", res.found, res.more, res.err)
	}

	// A member that stops answering: the error says so, nothing is guessed.
	if err := h.env.StopCluster(1); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.env.StartCluster(h.ctx, 1); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	res := r.cleanup(h.ctx, mesh, mb, written{peers: true, services: true})
	if res.err == nil || res.done() {
		t.Fatalf("cleanup of a stopped member: found %d, err %v; want a failure", res.found, res.err)
	}
	if msg := res.err.Error(); !strings.Contains(msg, "did not answer") || strings.Contains(msg, "127.0.0.1") {
		t.Errorf("cleanup of a stopped member: %q, want that it did not answer, without its address", msg)
	}
	t.Logf("a stopped member failed the cleanup in %s: %v", time.Since(start).Round(time.Millisecond), res.err)
}
