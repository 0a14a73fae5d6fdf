package admission

import (
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestCheckDuplicates(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
		{Name: "home", Local: true}, {Name: "west"}, {Name: "north"},
	}}}
	tests := []struct {
		name string
		refs []entryRef
		want []string
	}{
		{name: "nothing known", refs: []entryRef{{}, {}, {}}},
		{name: "distinct servers", refs: []entryRef{{candidates: []string{"id-home"}}, {server: "https://a:6443"}, {server: "https://b:6443"}}},
		{
			name: "one server twice",
			refs: []entryRef{{candidates: []string{"id-home"}}, {server: "https://a:6443"}, {server: "https://a:6443"}},
			want: []string{"spec.clusters[2]: Invalid value: \"north\": reaches the same cluster as spec.clusters[1] (west)"},
		},
		{
			name: "the local cluster by another name",
			refs: []entryRef{{candidates: []string{"id-home"}}, {server: "https://localhost:6443", candidates: []string{"id-home"}}, {server: "https://b:6443"}},
			want: []string{"spec.clusters[1]: Invalid value: \"west\": reaches the same cluster as spec.clusters[0] (home)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := checkDuplicates(mesh, tt.refs)
			if len(errs) != len(tt.want) {
				t.Fatalf("got %v, want %v", errs, tt.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %q, want it to start with %q", e.Error(), tt.want[i])
				}
			}
		})
	}
}
