package admission

import (
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/grants"
)

// TestAdmitRecordsServicesAuthor: the author of a mesh with services on
// the host is the requester of its last spec write, whatever a client sent.
func TestAdmitRecordsServicesAuthor(t *testing.T) {
	forged := `{"name":"system:admin","groups":["system:masters"]}`
	withServices := func(services bool, author string) *meshv1alpha1.ClusterMesh {
		m := mesh(
			meshv1alpha1.ClusterEntry{Name: "a", Local: true, PodCIDRs: []string{"10.42.0.0/16"}, WireguardCIDR: "10.4.0.0/16"},
			meshv1alpha1.ClusterEntry{Name: "b", PodCIDRs: []string{"10.52.0.0/16"}, WireguardCIDR: "10.5.0.0/16"},
		)
		m.Name, m.Namespace = "m", "tenant-a"
		if services {
			m.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
		}
		if author != "" {
			m.Annotations = map[string]string{meshv1alpha1.AnnotationServicesAuthor: author}
		}
		return m
	}
	tests := []struct {
		name     string
		obj, old *meshv1alpha1.ClusterMesh
		want     string // the recorded author's name
	}{
		{name: "the requester is recorded", obj: withServices(true, ""), want: "someone"},
		{name: "a forged author is overwritten", obj: withServices(true, forged), want: "someone"},
		{name: "without services nobody is recorded", obj: withServices(false, forged)},
		{name: "a metadata-only write keeps the stored author", obj: withServices(true, ""), old: withServices(true, `{"name":"earlier"}`), want: "earlier"},
		{name: "a metadata-only write cannot forge one", obj: withServices(true, forged), old: withServices(true, `{"name":"earlier"}`), want: "earlier"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(nil)
			p.SetAuthorizer(verbsAllowed{"create": true, "update": true, "delete": true})
			p.SetGrants(coverageOf{})
			got, err := admitted(t, p, tt.obj, tt.old)
			if err != nil {
				t.Fatal(err)
			}
			a, ok := grants.AuthorOf(got)
			if a.Name != tt.want || ok != (tt.want != "") {
				t.Errorf("recorded %+v (present %v), want %q", a, ok, tt.want)
			}
		})
	}
}
