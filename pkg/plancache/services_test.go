package plancache

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestServices: refused for a mesh without services; otherwise one output
// per change, like plans, and clusters whose caches never synced are
// unreachable, so nothing is deleted on their account.
func TestServices(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC))
	c, err := New(Config{Members: newMembers(t), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	mesh := testMesh()
	for _, v := range []meshv1alpha1.MultiClusterServices{"", meshv1alpha1.MultiClusterServicesDisabled} {
		mesh.Spec.MultiClusterServices = v
		if _, err := c.Services(mesh); !errors.Is(err, ErrServicesDisabled) {
			t.Errorf("multiClusterServices %q: error %v, want ErrServicesDisabled", v, err)
		}
	}

	mesh.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
	first, err := c.Services(mesh)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Clusters) != len(mesh.Spec.Clusters) {
		t.Fatalf("%d clusters in the output, want %d", len(first.Clusters), len(mesh.Spec.Clusters))
	}
	for _, co := range first.Clusters {
		d := co.Delete
		if co.Reachable || len(co.Imports) != 0 || len(d.Imports)+len(d.Services)+len(d.EndpointSlices) != 0 {
			t.Errorf("cluster %s never synced: %+v, want unreachable, nothing to write or delete", co.Name, co)
		}
	}

	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	for _, tc := range []struct {
		name   string
		reused bool
		mutate func()
	}{
		{"repeated", true, func() {}},
		{"the clock alone", true, func() { clk.SetTime(clk.Now().Add(time.Hour)) }},
		{"a change of its inputs", false, func() { c.invalidate(key) }},
		{"a change of another mesh", true, func() { c.invalidate(types.NamespacedName{Namespace: "ns", Name: "other"}) }},
		{"a new resourceVersion", false, func() { mesh.ResourceVersion = "2" }},
		{"another UID", false, func() { mesh.UID = "uid-2" }},
		{"forgotten", false, func() { c.forget(key) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.mutate()
			got, err := c.Services(mesh)
			if err != nil {
				t.Fatal(err)
			}
			if (got == first) != tc.reused {
				t.Errorf("reused %v, want %v", got == first, tc.reused)
			}
			first = got
		})
	}
}
