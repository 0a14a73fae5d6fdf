package reconciler

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// TestServicesMayRemain: only a status that once showed services, and not
// yet their confirmed removal, sends a Disabled mesh listing its members.
func TestServicesMayRemain(t *testing.T) {
	tests := []struct {
		name   string
		reason string // of ServicesExclusive; "" for none
		want   bool
	}{
		{name: "created Disabled, never reconciled", want: false},
		{name: "removal confirmed", reason: ReasonServicesDisabled, want: false},
		{name: "was Enabled", reason: ReasonServicesExclusive, want: true},
		{name: "was Enabled on a shared cluster", reason: planner.WarningServicesClusterShared, want: true},
		{name: "removal under way", reason: ReasonServicesRemoving, want: true},
		{name: "plan failed meanwhile", reason: ReasonPlanFailed, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mesh := testMesh()
			if tt.reason != "" {
				mesh.Status.Conditions = []metav1.Condition{{Type: meshv1alpha1.ConditionServicesExclusive, Status: metav1.ConditionTrue, Reason: tt.reason}}
			}
			if got := servicesMayRemain(mesh); got != tt.want {
				t.Errorf("servicesMayRemain = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOwnedServicesObjects: only objects with all of the mesh's labels,
// outside the namespaces denied on the host, are deleted.
func TestOwnedServicesObjects(t *testing.T) {
	mesh := testMesh()
	mesh.UID = "u1"
	own := planner.ManagedLabels(mesh.Namespace, mesh.Name, mesh.UID, "one")
	forged := map[string]string{planner.LabelMeshUID: string(mesh.UID), planner.LabelMeshNamespace: mesh.Namespace, planner.LabelMeshName: "other"}
	obj := func(ns, name string, labels map[string]string) servicesObject {
		return servicesObject{kind: "ServiceImport", obj: &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}}
	}
	svc := servicesObject{kind: "Service", obj: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "derived-x", Labels: own}}}
	tests := []struct {
		name   string
		objs   []servicesObject
		denied map[string]string
		want   []string
	}{
		{name: "the mesh's", objs: []servicesObject{obj("shop", "cart", own), svc}, want: []string{"shop/cart", "shop/derived-x"}},
		{name: "unlabelled", objs: []servicesObject{obj("shop", "mine", nil)}},
		{name: "another mesh's name with this UID", objs: []servicesObject{obj("shop", "forged", forged)}},
		{name: "a namespace the mesh may not use", objs: []servicesObject{obj("victim", "cart", own), obj("shop", "cart", own)},
			denied: map[string]string{"victim": "no grant"}, want: []string{"shop/cart"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, o := range ownedServicesObjects(mesh, tt.objs, tt.denied) {
				got = append(got, o.obj.GetNamespace()+"/"+o.obj.GetName())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNeverWritten: only a list the cluster refuses for want of the CRDs
// or of the right to list counts as clean; any other failure keeps the
// cluster's objects until it can be read.
func TestNeverWritten(t *testing.T) {
	gr := schema.GroupResource{Group: mcsv1beta1.GroupName, Resource: "serviceimports"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "CRDs not served", err: apierrors.NewNotFound(gr, ""), want: true},
		{name: "may not list", err: apierrors.NewForbidden(gr, "", errors.New("rbac")), want: true},
		{name: "unauthorized", err: apierrors.NewUnauthorized("expired")},
		{name: "timeout", err: apierrors.NewTimeoutError("slow", 1)},
		{name: "no answer", err: errors.New("connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := neverWritten(tt.err); got != tt.want {
				t.Errorf("neverWritten = %v, want %v", got, tt.want)
			}
		})
	}
}
