//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// svcHold is how long an attack is watched for an effect it must not have.
const svcHold = 5 * time.Second

// testGiantSlice: a member writes an EndpointSlice with more endpoints than
// --max-endpoints-per-service for an exported Service. None of them is
// written anywhere, what was imported from the member stays as it was, and
// once the slice is gone the member's services are used again.
func (s *svcEnv) testGiantSlice(t *testing.T) {
	ctx := context.Background()
	kept := s.namespace(t, 1, 2)
	s.backend(t, 1, kept, "kept", []string{"10.11.2.1"}, nil)
	s.export(t, 1, kept, "kept")
	framework.EventuallyT(t, svcConverge, "an import before the attack", func() error {
		imp, err := s.imported(2, kept, "kept")
		if err == nil && len(imp.endpoints()) != 1 {
			err = fmt.Errorf("endpoints %v", imp.endpoints())
		}
		return err
	})

	ns := s.namespace(t, 1, 2)
	s.backend(t, 1, ns, "big", nil, nil)
	giant := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "big-giant", Namespace: ns,
		Labels: map[string]string{discoveryv1.LabelServiceName: "big", discoveryv1.LabelManagedBy: "attacker"}},
		AddressType: discoveryv1.AddressTypeIPv4}
	for i := range svcMaxEndpoints + 5 {
		giant.Endpoints = append(giant.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.11.3.%d", i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	if _, err := s.kube(1).DiscoveryV1().EndpointSlices(ns).Create(ctx, giant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.export(t, 1, ns, "big")
	deadline := time.Now().Add(svcHold)
	for time.Now().Before(deadline) {
		if err := s.gone(2, ns, "big"); err != nil {
			t.Fatalf("the Service with a giant slice was imported in cluster 2: %v", err)
		}
		imp, err := s.imported(2, kept, "kept")
		if err != nil || !slices.Equal(imp.endpoints(), []string{"10.11.2.1"}) {
			t.Fatalf("the import from the attacking member changed: %v, %v", imp, err)
		}
		time.Sleep(500 * time.Millisecond)
	}

	s.wantEvent(t, "TooManyEndpoints", "cluster one")
	s.wantViewReason(t, "one", "TooManyEndpoints")
	if err := s.kube(1).DiscoveryV1().EndpointSlices(ns).Delete(ctx, giant.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The member is used again once the slice is gone.
	s.waitImported(t, 2, ns, "big")
}

// testExportFlood: a member (reached as the shipped member identity)
// creates more ServiceExports than --max-service-exports-per-cluster. None
// of the flood is imported, and what was imported from it before stays.
func (s *svcEnv) testExportFlood(t *testing.T) {
	before := s.namespace(t, 1, 2)
	s.backend(t, 2, before, "before", []string{"10.12.2.1"}, nil)
	s.export(t, 2, before, "before")
	s.waitImported(t, 1, before, "before")

	flood := s.namespace(t, 1, 2)
	for i := range svcMaxExports + 1 {
		name := fmt.Sprintf("flood-%d", i)
		s.backend(t, 2, flood, name, nil, nil)
		s.export(t, 2, flood, name)
	}
	// Exports made before the limit was crossed may have been imported;
	// one made after it never is.
	time.Sleep(2 * time.Second)
	s.backend(t, 2, flood, "late", nil, nil)
	s.export(t, 2, flood, "late")
	deadline := time.Now().Add(svcHold)
	for time.Now().Before(deadline) {
		list, err := s.mcs(1).MulticlusterV1beta1().ServiceImports(flood).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(list.Items); n > svcMaxExports {
			t.Fatalf("%d ServiceImports of the flood in cluster 1, more than the limit of %d exports", n, svcMaxExports)
		}
		if err := s.gone(1, flood, "late"); err != nil {
			t.Fatalf("an export made over the limit was imported: %v", err)
		}
		if _, err := s.imported(1, before, "before"); err != nil {
			t.Fatalf("the import from before the flood: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.wantEvent(t, "TooManyServiceExports", "cluster two")
	s.wantViewReason(t, "two", "TooManyServiceExports")
}

// wantViewReason waits for the services view to say why cluster's
// services are not used.
func (s *svcEnv) wantViewReason(t *testing.T, cluster, reason string) {
	t.Helper()
	framework.EventuallyT(t, svcConverge, "the view's reason for cluster "+cluster, func() error {
		v, err := s.view()
		if err != nil {
			return err
		}
		for _, c := range v.Clusters {
			if c.Cluster == cluster && c.Reason == reason && c.Message != "" {
				return nil
			}
		}
		return fmt.Errorf("clusters %+v, want %s with reason %s", v.Clusters, cluster, reason)
	})
}

// wantEvent waits for a Warning event of the mesh with reason whose
// message has text.
func (s *svcEnv) wantEvent(t *testing.T, reason, text string) {
	t.Helper()
	framework.EventuallyT(t, svcConverge, "event "+reason, func() error {
		list, err := s.kube(framework.HostCluster).CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "svc" && strings.Contains(e.Message, text) {
				return nil
			}
		}
		return fmt.Errorf("no %s event of mesh svc naming %q among %d", reason, text, len(list.Items))
	})
}

// testDerivedNameTaken: a user's own Service in an importing cluster holds
// the derived Service's name. It is never overwritten nor deleted (neither
// while imported nor on the unexport); the import there has no IP and
// says why, as do the export and the view; once the user's Service is
// gone, the derived Service is written.
func (s *svcEnv) testDerivedNameTaken(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, 1, 2)
	derived := services.DerivedServiceName(ns, "pay")
	mine := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: derived, Namespace: ns}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "mine"}, Ports: []corev1.ServicePort{{Name: "mine", Port: 7000, Protocol: corev1.ProtocolTCP}}}}
	mine, err := s.kube(2).CoreV1().Services(ns).Create(ctx, mine, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	untouched := func() {
		t.Helper()
		got, err := s.kube(2).CoreV1().Services(ns).Get(ctx, derived, metav1.GetOptions{})
		if err != nil || got.ResourceVersion != mine.ResourceVersion {
			t.Fatalf("the user's Service %s: %v, resourceVersion %v, was %s", derived, err, got, mine.ResourceVersion)
		}
	}
	s.backend(t, 1, ns, "pay", []string{"10.11.1.70"}, nil)
	s.export(t, 1, ns, "pay")
	framework.EventuallyT(t, svcConverge, "the import, the export and the view saying the derived name is taken", func() error {
		si, err := s.mcs(2).MulticlusterV1beta1().ServiceImports(ns).Get(ctx, "pay", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady)); c == nil ||
			c.Status != metav1.ConditionFalse || c.Reason != services.BlockedDerivedServiceTaken {
			return fmt.Errorf("the import's Ready condition %+v, want False %s", c, services.BlockedDerivedServiceTaken)
		}
		if len(si.Spec.IPs) != 0 || si.Annotations[services.AnnotationDerivedService] != "" {
			return fmt.Errorf("the blocked import has ips %v, derived Service %q", si.Spec.IPs, si.Annotations[services.AnnotationDerivedService])
		}
		se, err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Get(ctx, "pay", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(se.Status.Conditions, string(mcsv1beta1.ServiceExportConditionReady)); c == nil ||
			!strings.Contains(c.Message, "two ("+services.BlockedDerivedServiceTaken+")") {
			return fmt.Errorf("the export's Ready condition %+v does not name two (%s)", c, services.BlockedDerivedServiceTaken)
		}
		v, err := s.view()
		if err != nil {
			return err
		}
		if imp := viewImport(v, "two", ns, "pay"); imp == nil || imp.Blocked != services.BlockedDerivedServiceTaken || imp.DerivedService != "" {
			return fmt.Errorf("the view's import in two: %+v, want blocked %s", imp, services.BlockedDerivedServiceTaken)
		}
		if imp, err := s.imported(1, ns, "pay"); err != nil || imp.derived == nil || !slices.Equal(imp.endpoints(), []string{"10.11.1.70"}) {
			return fmt.Errorf("the import in cluster 1, where the name is free: %v, %v", imp, err)
		}
		return nil
	})
	for deadline := time.Now().Add(svcHold); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		untouched()
		if imp, err := s.imported(2, ns, "pay"); err != nil || len(imp.slices) != 0 {
			t.Fatalf("the blocked import in cluster 2: %v, %v; want no EndpointSlices", imp, err)
		}
	}

	// The unexport removes the import and leaves the user's Service.
	if err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Delete(ctx, "pay", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, svcConverge, "the import gone from cluster 2", func() error { return s.gone(2, ns, "pay") })
	time.Sleep(time.Second)
	untouched()

	// Once the user's Service is gone, the derived Service is written.
	if err := s.kube(2).CoreV1().Services(ns).Delete(ctx, derived, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.export(t, 1, ns, "pay")
	framework.EventuallyT(t, svcConverge, "the derived Service written once the name is free", func() error {
		imp, err := s.imported(2, ns, "pay")
		switch {
		case err != nil:
			return err
		case imp.derived == nil || imp.derived.Name != derived || len(imp.si.Spec.IPs) == 0 || !slices.Equal(imp.si.Spec.IPs, imp.derived.Spec.ClusterIPs):
			return fmt.Errorf("derived Service %v, ips %v", imp.derived != nil, imp.si.Spec.IPs)
		case !slices.Equal(imp.endpoints(), []string{"10.11.1.70"}):
			return fmt.Errorf("endpoints %v", imp.endpoints())
		}
		if c := meta.FindStatusCondition(imp.si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady)); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("the import's Ready condition %+v", c)
		}
		return nil
	})
}
