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
