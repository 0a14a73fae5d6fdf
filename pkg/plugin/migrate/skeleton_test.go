package migrate

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// The skeleton of the flat form is a ClusterMesh as it stands: left as
// printed, validation names every placeholder's field; filled in as its
// comments say, it is valid and keeps what the predecessor's entries said.
func TestSkeletonOfTheFlatForm(t *testing.T) {
	meshes, _, err := ReadPredecessorMeshes(strings.NewReader(flatMesh))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteSkeleton(&out, Convert(&meshes[0], "ns")); err != nil {
		t.Fatal(err)
	}
	skeleton := out.String()
	for _, banned := range []string{"null", `""`} {
		if strings.Contains(skeleton, banned) {
			t.Errorf("the skeleton holds %s:\n%s", banned, skeleton)
		}
	}
	filled := strings.NewReplacer(
		"podCIDRs: [<the pod networks>]", "podCIDRs: [10.1.0.0/16]",
		"wireguardCIDR: <the Kilo subnet, kg's --subnet>", "wireguardCIDR: 10.200.0.0/24",
		"# serviceCIDR: <the service network>", "serviceCIDR: 10.96.0.0/12",
	).Replace(skeleton)
	// The replacer filled cluster a's lines into b's too; b's networks
	// differ, and it names no service network.
	a, b, _ := strings.Cut(filled, "  - name: b\n")
	b = strings.NewReplacer("10.1.0.0/16", "10.2.0.0/16", "10.200.0.0/24", "10.200.1.0/24", "serviceCIDR: 10.96.0.0/12", "# serviceCIDR: <the service network>").Replace(b)
	filled = a + "  - name: b\n" + b

	for _, tc := range []struct {
		name       string
		text       string
		wantFields []string // field paths validation must name; none: valid
	}{
		{name: "as printed", text: skeleton, wantFields: []string{"spec.clusters[0].podCIDRs[0]", "spec.clusters[0].wireguardCIDR", "spec.clusters[1].podCIDRs[0]", "spec.clusters[1].wireguardCIDR"}},
		{name: "filled in", text: filled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m meshv1alpha1.ClusterMesh
			if err := yaml.UnmarshalStrict([]byte(tc.text), &m); err != nil {
				t.Fatalf("not a ClusterMesh: %v\n%s", err, tc.text)
			}
			if m.Name != "flat" || m.Namespace != "ns" || len(m.Spec.Clusters) != 2 || !m.Spec.Clusters[0].Local ||
				m.Spec.Clusters[1].KubeconfigSecretRef == nil || m.Spec.Clusters[1].KubeconfigSecretRef.Name != "b" {
				t.Errorf("the skeleton lost what the predecessor said: %+v", m)
			}
			meshv1alpha1.SetDefaults(&m)
			errs := validation.ValidateClusterMesh(&m)
			got := map[string]bool{}
			for _, e := range errs {
				got[e.Field] = true
			}
			for _, f := range tc.wantFields {
				if !got[f] {
					t.Errorf("validation does not name %s: %v", f, errs.ToAggregate())
				}
			}
			if len(tc.wantFields) == 0 && len(errs) > 0 {
				t.Errorf("filled in as its comments say, the skeleton is invalid: %v\n%s", errs.ToAggregate(), tc.text)
			}
		})
	}
}
