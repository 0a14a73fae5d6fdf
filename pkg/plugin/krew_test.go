package plugin

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The krew manifest is a template that hack/plugin-release.sh fills in;
// filled in, it must describe this plugin for every platform it lists.
func TestKrewManifestTemplate(t *testing.T) {
	data, err := os.ReadFile("../../artifacts/krew/mesh.yaml")
	if err != nil {
		t.Fatal(err)
	}
	placeholders := regexp.MustCompile(`\$\{([A-Z0-9_]+)\}`)
	filled := placeholders.ReplaceAllStringFunc(string(data), func(p string) string {
		if p == "${VERSION}" {
			return "v1.2.3"
		}
		return strings.Repeat("a", 64)
	})
	var m struct {
		Kind     string
		Metadata struct{ Name string }
		Spec     struct {
			Version   string
			Platforms []struct {
				Selector struct{ MatchLabels map[string]string } `json:"selector"`
				URI      string                                  `json:"uri"`
				Sha256   string                                  `json:"sha256"`
				Bin      string                                  `json:"bin"`
			}
		}
	}
	if err := yaml.Unmarshal([]byte(filled), &m); err != nil {
		t.Fatal(err)
	}
	if m.Kind != "Plugin" || m.Metadata.Name != "mesh" || m.Spec.Version != "v1.2.3" || len(m.Spec.Platforms) == 0 {
		t.Fatalf("manifest %+v", m)
	}
	for _, p := range m.Spec.Platforms {
		goos, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		if p.Bin != "kubectl-mesh" || !strings.HasSuffix(p.URI, "/v1.2.3/kubectl-mesh_v1.2.3_"+goos+"_"+arch+".tar.gz") || len(p.Sha256) != 64 {
			t.Errorf("platform %s/%s: %+v", goos, arch, p)
		}
	}
	script, err := os.ReadFile("../../hack/plugin-release.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Spec.Platforms {
		if want := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]; !strings.Contains(string(script), want) {
			t.Errorf("hack/plugin-release.sh does not build %s", want)
		}
	}
}
