package docs

import (
	"go/ast"
	"os"
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestReferenceServicesReasons: the table of stable services reasons in
// reference.md lists every reason an endpoint is left out or an import
// blocked for (pkg/planner/services), once, and no other.
func TestReferenceServicesReasons(t *testing.T) {
	data, err := os.ReadFile("reference.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n| reason | where | meaning |\n")
	if !ok {
		t.Fatal("reference.md has no table | reason | where | meaning |")
	}
	var listed []string
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.HasPrefix(line, "| ---") {
			continue
		}
		listed = append(listed, strings.Trim(strings.TrimSpace(strings.Split(strings.Trim(line, "|"), "|")[0]), "`"))
	}
	var want []string
	for _, c := range stringConstants(t, "pkg/planner/services") {
		if (strings.HasPrefix(c.name, "LeftOut") || strings.HasPrefix(c.name, "Blocked")) && !slices.Contains(want, c.value) {
			want = append(want, c.value)
		}
	}
	want = append(want, plannerAliases(t, "pkg/planner/services", "Blocked")...)
	if len(want) == 0 {
		t.Fatal("no LeftOut or Blocked constants in pkg/planner/services: the test no longer matches the source")
	}
	for _, r := range want {
		if n := strings.Count(" "+strings.Join(listed, " ")+" ", " "+r+" "); n != 1 {
			t.Errorf("reference.md's services reasons table lists %s %d times, want once", r, n)
		}
	}
	for _, r := range listed {
		if !slices.Contains(want, r) {
			t.Errorf("reference.md's services reasons table lists %s, which pkg/planner/services does not define", r)
		}
	}
}

// plannerAliases are the values of the constants of dir named with prefix
// and defined as a constant of pkg/planner (planner.X), which
// stringConstants, reading one package, cannot resolve.
func plannerAliases(t *testing.T, dir, prefix string) []string {
	t.Helper()
	planner := map[string]string{}
	for _, c := range stringConstants(t, "pkg/planner") {
		planner[c.name] = c.value
	}
	_, files := sourceFiles(t, dir)
	var out []string
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) || !strings.HasPrefix(name.Name, prefix) {
					continue
				}
				if sel, ok := vs.Values[i].(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "planner" {
						if v, ok := planner[sel.Sel.Name]; ok {
							out = append(out, v)
						} else {
							t.Errorf("%s = planner.%s, which pkg/planner does not define as a string", name.Name, sel.Sel.Name)
						}
					}
				}
			}
			return true
		})
	}
	return out
}

// TestReferenceConditions: reference.md's status fields name every
// condition a ClusterMesh has.
func TestReferenceConditions(t *testing.T) {
	data, err := os.ReadFile("reference.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "Status fields of a ClusterMesh")
	if !ok {
		t.Fatal(`reference.md has no "Status fields of a ClusterMesh"`)
	}
	para, _, _ := strings.Cut(rest, "\n\n")
	for _, c := range meshv1alpha1.ConditionTypes {
		if !strings.Contains(para, "`"+c+"`") {
			t.Errorf("reference.md's status fields do not name the condition %s", c)
		}
	}
}
