package docs

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/migrate"
)

// fencedBlock returns the lines of the first fenced block of the given
// language in text after the line holding after, with the block's indent
// taken off.
func fencedBlock(t *testing.T, text, after, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(text, after)
	if !ok {
		t.Fatalf("no %q in the page", after)
	}
	lines := strings.Split(rest, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "```"+lang {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
		var out []string
		for _, b := range lines[i+1:] {
			if strings.TrimSpace(b) == "```" {
				return strings.Join(out, "\n") + "\n"
			}
			out = append(out, strings.TrimPrefix(b, indent))
		}
		t.Fatalf("the %s block after %q is not closed", lang, after)
	}
	t.Fatalf("no %s block after %q", lang, after)
	return ""
}

// TestMigrationFlatFormSkeleton: the page's example of a mesh in the flat
// allowedNetworks form and what `kubectl mesh import` prints for it (stderr,
// stdout and the error, as a terminal shows them) are what import does.
func TestMigrationFlatFormSkeleton(t *testing.T) {
	data, err := os.ReadFile("migration.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	input := fencedBlock(t, page, "For this mesh of the flat form", "yaml")
	shown := fencedBlock(t, page, "For this mesh of the flat form", "console")

	meshes, _, err := migrate.ReadPredecessorMeshes(strings.NewReader(input))
	if err != nil || len(meshes) != 1 {
		t.Fatalf("the page's flat mesh: %d meshes, %v", len(meshes), err)
	}
	conv := migrate.Convert(&meshes[0], "default")
	if len(conv.Missing) == 0 {
		t.Fatal("the page's flat mesh converts without anything to fill in: it is not of the flat form")
	}
	var terminal bytes.Buffer
	terminal.WriteString("$ kubectl mesh import -f flat-mesh.yaml\n")
	err = migrate.ReportFlatForm(&terminal, &terminal, conv)
	if err == nil {
		t.Fatal("import of the flat form reports no error")
	}
	terminal.WriteString("error: " + err.Error() + "\n")
	if shown != terminal.String() {
		t.Errorf("migration.md shows for the flat form:\n%s\nimport prints:\n%s", shown, terminal.String())
	}
}
