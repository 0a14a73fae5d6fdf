//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// What another writer puts on the objects it shares with the server.
const (
	otherFinalizer   = "example.com/audit"
	otherLastApplied = `{"note":"another writer"}`
)

// shared is one object the server writes and another writer marks.
type shared struct {
	what, name string
	patch      func(ctx context.Context, data []byte) error
	get        func(ctx context.Context) (metav1.Object, error)
	// owned: the other writer adds an owner reference too.
	owned bool
}

// objectClient is what the typed clients of the shared objects have in common.
type objectClient[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

func sharedObject[T metav1.Object](what, name string, c objectClient[T], owned bool) shared {
	return shared{what: what, name: name, owned: owned,
		patch: func(ctx context.Context, data []byte) error {
			_, err := c.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
			return err
		},
		get: func(ctx context.Context) (metav1.Object, error) { return c.Get(ctx, name, metav1.GetOptions{}) },
	}
}

// testOtherWriters: another writer's finalizer and kubectl's last-applied
// annotation on the ServiceImport, the derived Service, an EndpointSlice
// and the ServiceExport, and another owner of the derived Service, stay
// while the server updates each of them (and the import's and export's
// status) for a change of the export.
func (s *svcEnv) testOtherWriters(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, 1, 2)
	s.backend(t, 1, ns, "audit", []string{"10.11.1.80"}, nil)
	s.export(t, 1, ns, "audit")
	var imp *imported
	framework.EventuallyT(t, svcConverge, "the import in cluster 2", func() error {
		var err error
		if imp, err = s.imported(2, ns, "audit"); err != nil {
			return err
		}
		if imp.derived == nil || len(imp.si.Spec.IPs) == 0 || len(imp.slices) != 1 {
			return fmt.Errorf("derived Service %v, ips %v, %d slices", imp.derived != nil, imp.si.Spec.IPs, len(imp.slices))
		}
		return s.exportCondition(1, ns, "audit", mcsv1beta1.ServiceExportConditionReady, metav1.ConditionTrue, "")
	})

	imports, exports := s.mcs(2).MulticlusterV1beta1().ServiceImports(ns), s.mcs(1).MulticlusterV1beta1().ServiceExports(ns)
	svcs, slicesOf := s.kube(2).CoreV1().Services(ns), s.kube(2).DiscoveryV1().EndpointSlices(ns)
	objects := []shared{
		sharedObject[*mcsv1beta1.ServiceImport]("ServiceImport", "audit", imports, false),
		sharedObject[*corev1.Service]("derived Service", imp.derived.Name, svcs, true),
		sharedObject[*discoveryv1.EndpointSlice]("EndpointSlice", imp.slices[0].Name, slicesOf, false),
		sharedObject[*mcsv1beta1.ServiceExport]("ServiceExport", "audit", exports, false),
	}

	// The derived Service's other owner must exist: the garbage collector
	// removes a reference to an owner that does not.
	owner, err := s.kube(2).CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audit-owner", Namespace: ns}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	otherOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}

	// Merge patches, as kubectl sends them: an update would race the
	// server's own writes. The list of owners is replaced whole, so that
	// patch carries the resourceVersion it was read at.
	mark := map[string]any{"metadata": map[string]any{"finalizers": []string{otherFinalizer},
		"annotations": map[string]string{corev1.LastAppliedConfigAnnotation: otherLastApplied}}}
	for _, o := range objects {
		t.Cleanup(func() {
			err := o.patch(context.Background(), []byte(`{"metadata":{"finalizers":null}}`))
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing the finalizer of %s %s: %v", o.what, o.name, err)
			}
		})
		framework.EventuallyT(t, svcConverge, "another writer marking the "+o.what, func() error {
			patch := mark
			if o.owned {
				derived, err := svcs.Get(ctx, o.name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				patch = map[string]any{"metadata": map[string]any{"finalizers": []string{otherFinalizer}, "resourceVersion": derived.ResourceVersion,
					"annotations":     map[string]string{corev1.LastAppliedConfigAnnotation: otherLastApplied},
					"ownerReferences": append(derived.OwnerReferences, otherOwner)}}
			}
			b, err := json.Marshal(patch)
			if err != nil {
				return err
			}
			return o.patch(ctx, b)
		})
	}

	// The changes: the exported Service's affinity (the import's spec and
	// the derived Service's), a new endpoint (the slice's), one outside the
	// podCIDRs (the export's Ready).
	if _, err := s.kube(1).CoreV1().Services(ns).Patch(ctx, "audit", types.MergePatchType, []byte(`{"spec":{"sessionAffinity":"ClientIP"}}`),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	s.readyPod(t, 1, ns, "audit", "audit-new", "10.11.1.81")
	s.readyPod(t, 1, ns, "audit", "audit-outside", "172.16.0.81")
	framework.EventuallyT(t, svcConverge, "the server's updates written", func() error {
		si, err := imports.Get(ctx, "audit", metav1.GetOptions{})
		if err != nil {
			return err
		}
		derived, err := svcs.Get(ctx, imp.derived.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		es, err := slicesOf.Get(ctx, imp.slices[0].Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		se, err := exports.Get(ctx, "audit", metav1.GetOptions{})
		if err != nil {
			return err
		}
		var addrs []string
		for _, e := range es.Endpoints {
			addrs = append(addrs, e.Addresses...)
		}
		slices.Sort(addrs)
		ready := meta.FindStatusCondition(se.Status.Conditions, string(mcsv1beta1.ServiceExportConditionReady))
		switch {
		case si.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || derived.Spec.SessionAffinity != corev1.ServiceAffinityClientIP:
			return fmt.Errorf("affinity %s on the import, %s on the derived Service; want ClientIP", si.Spec.SessionAffinity, derived.Spec.SessionAffinity)
		case !slices.Equal(addrs, []string{"10.11.1.80", "10.11.1.81"}):
			return fmt.Errorf("EndpointSlice %s has %v", es.Name, addrs)
		case ready == nil || !containsText(ready.Message, services.LeftOutOutsidePodCIDRs):
			return fmt.Errorf("the export's Ready %+v does not say %s", ready, services.LeftOutOutsidePodCIDRs)
		}
		return nil
	})
	// Then the import's status alone changes: written from the cache's copy.
	s.backend(t, 2, ns, "audit", []string{"10.12.1.80"}, func(svc *corev1.Service) { svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP })
	s.export(t, 2, ns, "audit")
	framework.EventuallyT(t, svcConverge, "the import's status.clusters written", func() error {
		si, err := imports.Get(ctx, "audit", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(si.Status.Clusters) != 2 {
			return fmt.Errorf("status.clusters %+v, want both exporters", si.Status.Clusters)
		}
		return nil
	})

	for _, o := range objects {
		got, err := o.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(got.GetFinalizers(), otherFinalizer) {
			t.Errorf("%s %s lost another writer's finalizer: finalizers %v", o.what, o.name, got.GetFinalizers())
		}
		if a := got.GetAnnotations()[corev1.LastAppliedConfigAnnotation]; a != otherLastApplied {
			t.Errorf("%s %s lost kubectl's last-applied annotation: %q", o.what, o.name, a)
		}
		if !o.owned {
			continue
		}
		refs := got.GetOwnerReferences()
		ours := slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.Kind == "ServiceImport" && r.UID == imp.si.UID })
		if !ours || !slices.Contains(refs, otherOwner) || len(refs) != 2 {
			t.Errorf("derived Service owners %+v, want the ServiceImport %s and the other owner %s", refs, imp.si.UID, otherOwner.UID)
		}
	}
}
