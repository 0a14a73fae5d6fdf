package migrate

import (
	"os"
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// The predecessor's sample, as the e2e tests use it (data from the shared
// reference: its README's mesh and two Peers it wrote).
const sampleFile = "../../../test/e2e/testdata/predecessor-sample.yaml"

func readSample(t *testing.T) *PredecessorMesh {
	t.Helper()
	f, err := os.Open(sampleFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	meshes, skipped, err := ReadPredecessorMeshes(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(meshes) != 1 || skipped != 2 {
		t.Fatalf("read %d meshes and skipped %d documents, want 1 mesh and the 2 Peers skipped", len(meshes), skipped)
	}
	return &meshes[0]
}

func TestConvertTypedSample(t *testing.T) {
	conv := Convert(readSample(t), "default")
	if len(conv.Missing) > 0 {
		t.Fatalf("the typed form converts completely; missing %v", conv.Missing)
	}
	m := conv.Mesh
	if m.Namespace != "kilo-system" || m.Name != "my-mesh" || m.APIVersion != "mesh.kilo.squat.ai/v1alpha1" {
		t.Errorf("converted %s %s/%s", m.APIVersion, m.Namespace, m.Name)
	}
	b := m.Spec.Clusters[1]
	if b.Name != "cluster-b" || b.KubeconfigSecretRef == nil || b.KubeconfigSecretRef.Name != "cluster-b-kubeconfig" || b.KubeconfigSecretRef.Key != "kubeconfig" ||
		!slices.Equal(b.PodCIDRs, []string{"10.2.0.0/16"}) || b.WireguardCIDR != "10.200.1.0/24" || b.ServiceCIDR != "10.112.0.0/12" || b.WireguardPort != 51820 {
		t.Errorf("cluster-b converted as %+v", b)
	}
	if !m.Spec.Clusters[0].Local {
		t.Errorf("cluster-a lost local: true")
	}
	// What the server stores must pass the server's own validation.
	meshv1alpha1.SetDefaults(m)
	if errs := validation.ValidateClusterMesh(m); len(errs) > 0 {
		t.Errorf("the converted sample is invalid: %v", errs.ToAggregate())
	}
}

const flatMesh = `apiVersion: kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata: {name: flat}
spec:
  clusters:
  - name: a
    local: true
    allowedNetworks: ["10.1.0.0/16", "10.200.0.0/24", "10.96.0.0/12"]
  - name: b
    kubeconfigSecretRef: {name: b, key: kubeconfig}
    allowedNetworks: ["10.2.0.0/16", "10.200.1.0/24"]
`

func TestConvertFlatListsWhatToFillIn(t *testing.T) {
	meshes, _, err := ReadPredecessorMeshes(strings.NewReader(flatMesh))
	if err != nil {
		t.Fatal(err)
	}
	conv := Convert(&meshes[0], "ns")
	if conv.Mesh.Namespace != "ns" {
		t.Errorf("namespace %q, want the one given", conv.Mesh.Namespace)
	}
	var got []string
	for _, m := range conv.Missing {
		got = append(got, m.Cluster+"."+m.Field)
	}
	want := []string{"a.podCIDRs", "a.wireguardCIDR", "a.serviceCIDR", "a.additionalCIDRs", "b.podCIDRs", "b.wireguardCIDR", "b.serviceCIDR", "b.additionalCIDRs"}
	if !slices.Equal(got, want) {
		t.Errorf("missing %v, want %v", got, want)
	}
	if s := conv.Missing[0].String(); !strings.Contains(s, "required") || !strings.Contains(s, "10.96.0.0/12") {
		t.Errorf("missing field described as %q", s)
	}
	if len(conv.Mesh.Spec.Clusters[0].PodCIDRs) != 0 {
		t.Errorf("a network was guessed: %v", conv.Mesh.Spec.Clusters[0].PodCIDRs)
	}
}

func TestReadRefusesUnknownFields(t *testing.T) {
	typo := strings.Replace(flatMesh, "allowedNetworks: [\"10.2.0.0/16\"", "allowedNetwork: [\"10.2.0.0/16\"", 1)
	if _, _, err := ReadPredecessorMeshes(strings.NewReader(typo)); err == nil {
		t.Errorf("a misspelt field was accepted")
	}
}
