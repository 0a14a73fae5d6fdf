package admission

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestExplainMissing(t *testing.T) {
	entries := field.NewPath("spec", "clusters")
	overlap := func(i int) *field.Error {
		return field.Invalid(entries.Index(i).Child("podCIDRs").Index(0), "10.52.0.0/16", "overlaps a network claimed by another ClusterMesh")
	}
	missing := map[int]*field.Error{1: field.Invalid(entries.Index(1).Child("kubeconfigSecretRef", "name"), "west-kubecnfig", "no Secret")}
	tests := []struct {
		name    string
		errs    field.ErrorList
		missing map[int]*field.Error
		want    []string
	}{
		{"nothing missing", field.ErrorList{overlap(1)}, nil, []string{"spec.clusters[1].podCIDRs[0]"}},
		{"a missing Secret without overlaps is no error", nil, missing, nil},
		{"the overlaps of the entry become the missing Secret, once",
			field.ErrorList{overlap(1), field.Invalid(entries.Index(1).Child("serviceCIDR"), "x", "overlaps"), overlap(2)}, missing,
			[]string{"spec.clusters[1].kubeconfigSecretRef.name", "spec.clusters[2].podCIDRs[0]"}},
		{"entry 11 is not entry 1", field.ErrorList{overlap(11)}, missing, []string{"spec.clusters[11].podCIDRs[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := explainMissing(tt.errs, tt.missing)
			var fields []string
			for _, e := range got {
				fields = append(fields, e.Field)
			}
			if len(fields) != len(tt.want) {
				t.Fatalf("fields %v, want %v", fields, tt.want)
			}
			for i := range fields {
				if fields[i] != tt.want[i] {
					t.Errorf("fields %v, want %v", fields, tt.want)
				}
			}
		})
	}
}
