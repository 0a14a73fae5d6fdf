package reconciler

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

func TestImportAnnotations(t *testing.T) {
	derived := map[string]string{services.AnnotationDerivedService: "derived-abc"}
	for _, tc := range []struct {
		name            string
		have, want, out map[string]string
		current         bool
	}{
		{"a derived Service named", map[string]string{"user": "x"}, derived, map[string]string{"user": "x", services.AnnotationDerivedService: "derived-abc"}, false},
		{"as wanted, other writers' kept", map[string]string{"user": "x", services.AnnotationDerivedService: "derived-abc"}, derived,
			map[string]string{"user": "x", services.AnnotationDerivedService: "derived-abc"}, true},
		{"a headless import drops the derived Service's", map[string]string{"user": "x", services.AnnotationDerivedService: "derived-abc"}, nil,
			map[string]string{"user": "x"}, false},
		{"nothing wanted, nothing there", nil, nil, map[string]string{}, true},
		{"an exported annotation dropped goes, other writers' stay",
			map[string]string{"user": "x", "a": "1", "b": "2", services.AnnotationExportedAnnotations: "a,b"},
			map[string]string{"a": "1", services.AnnotationExportedAnnotations: "a"},
			map[string]string{"user": "x", "a": "1", services.AnnotationExportedAnnotations: "a"}, false},
		{"every exported annotation dropped takes the key list with it",
			map[string]string{"user": "x", "a": "1", services.AnnotationExportedAnnotations: "a", services.AnnotationExportedLabels: "l"}, nil,
			map[string]string{"user": "x"}, false},
		{"a key another writer set, never listed, stays", map[string]string{"user": "x", services.AnnotationExportedAnnotations: "a"},
			map[string]string{"a": "1", services.AnnotationExportedAnnotations: "a"},
			map[string]string{"user": "x", "a": "1", services.AnnotationExportedAnnotations: "a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := importAnnotations(tc.have, tc.want); !maps.Equal(got, tc.out) {
				t.Errorf("importAnnotations = %v, want %v", got, tc.out)
			}
			have := &mcsv1beta1.ServiceImport{}
			have.Annotations = tc.have
			want := &mcsv1beta1.ServiceImport{}
			want.Annotations = tc.want
			if got := importSpecCurrent(want, have); got != tc.current {
				t.Errorf("importSpecCurrent = %v, want %v", got, tc.current)
			}
		})
	}
}

func TestImportLabels(t *testing.T) {
	listed := func(keys string) map[string]string {
		return map[string]string{services.AnnotationExportedLabels: keys}
	}
	for _, tc := range []struct {
		name            string
		have, want, out map[string]string
		listedHave      string
		current         bool
	}{
		{"as wanted, other writers' kept", map[string]string{"user": "x", "tier": "web"}, map[string]string{"tier": "web"},
			map[string]string{"user": "x", "tier": "web"}, "tier", true},
		{"an exported label dropped goes", map[string]string{"user": "x", "tier": "web", "team": "a"}, map[string]string{"team": "a"},
			map[string]string{"user": "x", "team": "a"}, "team,tier", false},
		{"an unlisted label stays", map[string]string{"user": "x", "tier": "web"}, map[string]string{},
			map[string]string{"user": "x", "tier": "web"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := &mcsv1beta1.ServiceImport{}
			have.Labels, have.Annotations = tc.have, listed(tc.listedHave)
			want := &mcsv1beta1.ServiceImport{}
			want.Labels, want.Annotations = tc.want, have.Annotations
			if got := importLabels(have, want); !maps.Equal(got, tc.out) {
				t.Errorf("importLabels = %v, want %v", got, tc.out)
			}
			if got := importSpecCurrent(want, have); got != tc.current {
				t.Errorf("importSpecCurrent = %v, want %v", got, tc.current)
			}
		})
	}
}

func TestMergedOwners(t *testing.T) {
	ours := metav1.OwnerReference{APIVersion: mcsv1beta1.GroupVersion.String(), Kind: mcsv1beta1.ServiceImportKindName, Name: "cart", UID: "si-2"}
	stale := ours
	stale.UID = "si-1"
	older := stale
	older.APIVersion = mcsv1beta1.GroupName + "/v1alpha1"
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cart", UID: "cm-1"}
	otherImport := ours
	otherImport.Name, otherImport.UID = "shop", "si-3"
	otherGroup := ours
	otherGroup.APIVersion, otherGroup.UID = "example.com/v1", "x-1"
	for _, tc := range []struct {
		name    string
		have    []metav1.OwnerReference
		out     []metav1.OwnerReference
		current bool
	}{
		{"none yet", nil, []metav1.OwnerReference{ours}, false},
		{"ours alone", []metav1.OwnerReference{ours}, []metav1.OwnerReference{ours}, true},
		{"another owner's kept", []metav1.OwnerReference{other, ours}, []metav1.OwnerReference{other, ours}, true},
		{"a ServiceImport of another group kept", []metav1.OwnerReference{otherGroup}, []metav1.OwnerReference{otherGroup, ours}, false},
		{"another ServiceImport's kept", []metav1.OwnerReference{otherImport}, []metav1.OwnerReference{otherImport, ours}, false},
		{"ours before another's stays in place", []metav1.OwnerReference{ours, other}, []metav1.OwnerReference{ours, other}, true},
		{"the recreated ServiceImport replaces the old in place", []metav1.OwnerReference{stale, other}, []metav1.OwnerReference{ours, other}, false},
		{"a duplicate of ours goes", []metav1.OwnerReference{stale, other, ours}, []metav1.OwnerReference{ours, other}, false},
		{"of another version too", []metav1.OwnerReference{older}, []metav1.OwnerReference{ours}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergedOwners(tc.have, []metav1.OwnerReference{ours}); !apiequality.Semantic.DeepEqual(got, tc.out) {
				t.Errorf("mergedOwners = %+v, want %+v", got, tc.out)
			}
			want := &corev1.Service{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{ours}}}
			have := &corev1.Service{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.have}}
			if got := derivedCurrent(want, have); got != tc.current {
				t.Errorf("derivedCurrent = %v, want %v", got, tc.current)
			}
		})
	}
}
