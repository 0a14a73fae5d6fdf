//go:build integration

package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestServicesUpdateLive: an update from a cache's slim copy keeps what
// the copy lacks and fails when the object changed since the cache read
// it, or between the read and the update, on a real kube-apiserver.
func TestServicesUpdateLive(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 1})
	ctx := context.Background()
	ns, err := env.NewNamespace(ctx, "live")
	if err != nil {
		t.Fatal(err)
	}
	svcs := env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Services(ns)
	const finalizer, lastApplied = "example.com/audit", `{"note":"another writer"}`
	otherWriter := func(name, label string) {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"other":%q}}}`, label)
		if _, err := svcs.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("another writer patching %s: %v", name, err)
		}
	}
	for _, tc := range []struct {
		name string
		// before runs after the cache read the object; between after updateLive read it.
		before, between func(name string)
		stale, conflict bool
	}{
		{name: "as the cache read it: what the copy lacks stays"},
		{name: "changed since the cache read it: not written", before: func(n string) { otherWriter(n, "before") }, stale: true},
		{name: "changed between the read and the update: a conflict", between: func(n string) { otherWriter(n, "between") }, conflict: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := framework.UniqueName("svc")
			created, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{finalizer},
				Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: lastApplied}},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := svcs.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
					t.Errorf("removing the finalizer: %v", err)
				}
			})
			// What a services cache keeps: no finalizers, no last-applied copy.
			have := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: created.UID, ResourceVersion: created.ResourceVersion},
				Spec: created.Spec}
			if tc.before != nil {
				tc.before(name)
			}
			get := func(ctx context.Context, n string, opts metav1.GetOptions) (*corev1.Service, error) {
				live, err := svcs.Get(ctx, n, opts)
				if err == nil && tc.between != nil {
					tc.between(n)
				}
				return live, err
			}
			before, err := svcs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = updateLive(ctx, get, svcs.Update, have, func(s *corev1.Service) { s.Labels = mergedMap(s.Labels, map[string]string{"mesh": "set"}) })
			switch {
			case tc.stale && !errors.Is(err, errStale), tc.conflict && !apierrors.IsConflict(err):
				t.Fatalf("updateLive: %v, want stale %v, conflict %v", err, tc.stale, tc.conflict)
			case !tc.stale && !tc.conflict && err != nil:
				t.Fatalf("updateLive: %v", err)
			}
			after, err := svcs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(after.Finalizers, []string{finalizer}) || after.Annotations[corev1.LastAppliedConfigAnnotation] != lastApplied {
				t.Errorf("another writer's finalizers %v and last-applied %q, want %s and %s", after.Finalizers, after.Annotations[corev1.LastAppliedConfigAnnotation],
					finalizer, lastApplied)
			}
			written := after.Labels["mesh"] == "set"
			if want := !tc.stale && !tc.conflict; written != want {
				t.Errorf("the mesh's label written %v, want %v", written, want)
			}
			if tc.stale && after.ResourceVersion != before.ResourceVersion {
				t.Errorf("written although stale: resourceVersion %s, was %s", after.ResourceVersion, before.ResourceVersion)
			}
		})
	}
}
