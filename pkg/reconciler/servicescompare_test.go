package reconciler

import (
	"maps"
	"testing"

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
