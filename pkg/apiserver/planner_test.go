package apiserver

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
)

// TestCachePlanner: one plan per change, shared by every caller, and never
// older than a change, a new version of the mesh, or planMaxAge.
func TestCachePlanner(t *testing.T) {
	members, err := clusters.NewManager(clusters.Config{Local: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	p := newCachePlanner(members, clk)
	mesh := &meshv1alpha1.ClusterMesh{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "uid-1", ResourceVersion: "1"},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{Name: "a", Local: true, PodCIDRs: []string{"10.1.0.0/16"}, WireguardCIDR: "10.2.0.0/16"},
			{Name: "b", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "b"}, PodCIDRs: []string{"10.3.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
		}},
	}
	first, err := p.Plan(mesh)
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string, want bool, mutate func()) {
		t.Helper()
		mutate()
		got, err := p.Plan(mesh)
		if err != nil {
			t.Fatal(err)
		}
		if (got == first) != want {
			t.Errorf("%s: reused %v, want %v", name, got == first, want)
		}
		first = got
	}
	same("repeated", true, func() {})
	same("within max age", true, func() { clk.SetTime(clk.Now().Add(planMaxAge / 2)) })
	same("after max age", false, func() { clk.SetTime(clk.Now().Add(planMaxAge)) })
	same("after a change of its clusters", false, func() { p.invalidate(types.NamespacedName{Namespace: "ns", Name: "m"}) })
	same("after a change of another mesh", true, func() { p.invalidate(types.NamespacedName{Namespace: "ns", Name: "other"}) })
	same("new resourceVersion", false, func() { mesh.ResourceVersion = "2" })
	same("recreated with another UID", false, func() { mesh.UID = "uid-2" })
	same("forgotten", false, func() { p.forget(types.NamespacedName{Namespace: "ns", Name: "m"}) })
}
