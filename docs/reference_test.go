package docs

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// metric is one metric the source registers.
type metric struct {
	name   string
	labels []string
	pos    string
}

// sourceMetrics finds every metrics.NewXxx(&metrics.XxxOpts{...}, labels)
// of k8s.io/component-base/metrics in the non-test files under pkg/, with
// its full name (namespace_subsystem_name, constants resolved).
func sourceMetrics(t *testing.T) []metric {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(filepath.Join("..", "pkg"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []metric
	for _, dir := range dirs {
		rel, _ := filepath.Rel("..", dir)
		consts := map[string]string{}
		for _, c := range stringConstants(t, rel) {
			consts[c.name] = c.value
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			pkgName := componentBaseMetricsName(f)
			if pkgName == "" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || !isSelector(call.Fun, pkgName, "New") || len(call.Args) == 0 {
					return true
				}
				lit := compositeOf(call.Args[0])
				if lit == nil || !isSelector(lit.Type, pkgName, "") || !strings.HasSuffix(lit.Type.(*ast.SelectorExpr).Sel.Name, "Opts") {
					return true
				}
				fields := map[string]string{}
				for _, e := range lit.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					key := kv.Key.(*ast.Ident).Name
					switch v := kv.Value.(type) {
					case *ast.BasicLit:
						fields[key], _ = strconv.Unquote(v.Value)
					case *ast.Ident:
						val, ok := consts[v.Name]
						if !ok && (key == "Namespace" || key == "Subsystem" || key == "Name") {
							t.Fatalf("%s: %s of a metric is %s, which this test cannot resolve", fset.Position(kv.Pos()), key, v.Name)
						}
						fields[key] = val
					}
				}
				var parts []string
				for _, k := range []string{"Namespace", "Subsystem", "Name"} {
					if fields[k] != "" {
						parts = append(parts, fields[k])
					}
				}
				m := metric{name: strings.Join(parts, "_"), pos: fset.Position(call.Pos()).String()}
				if len(call.Args) > 1 {
					if labels, ok := call.Args[1].(*ast.CompositeLit); ok {
						for _, l := range labels.Elts {
							if b, ok := l.(*ast.BasicLit); ok {
								v, _ := strconv.Unquote(b.Value)
								m.labels = append(m.labels, v)
							}
						}
					}
				}
				out = append(out, m)
				return true
			})
		}
	}
	return out
}

// componentBaseMetricsName is the name a file imports
// k8s.io/component-base/metrics under, or "".
func componentBaseMetricsName(f *ast.File) string {
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == "k8s.io/component-base/metrics" {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "metrics"
		}
	}
	return ""
}

// isSelector reports whether e is pkg.<prefix...>.
func isSelector(e ast.Expr, pkg, prefix string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg && strings.HasPrefix(sel.Sel.Name, prefix)
}

func compositeOf(e ast.Expr) *ast.CompositeLit {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit, _ := e.(*ast.CompositeLit)
	return lit
}

// tableRows returns the rows of the markdown tables of a section, cells
// trimmed, header and separator rows left out.
func tableRows(sec *section) [][]string {
	var rows [][]string
	for i, line := range sec.body {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| ---") {
			continue
		}
		if i+1 < len(sec.body) && strings.HasPrefix(sec.body[i+1], "| ---") {
			continue // a header
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return rows
}

var backticked = regexp.MustCompile("`([^`]+)`")

// TestReferenceMetrics: every metric the source registers has a row with
// its labels, and every row is a metric the source registers.
func TestReferenceMetrics(t *testing.T) {
	sec := readSections(t, "reference.md")["Metrics"]
	if sec == nil {
		t.Fatal("reference.md has no section Metrics")
	}
	documented := map[string][]string{}
	for _, row := range tableRows(sec) {
		if len(row) < 4 {
			t.Fatalf("metrics row %v: want metric, type, labels, meaning", row)
		}
		var labels []string
		for _, m := range backticked.FindAllStringSubmatch(row[2], -1) {
			labels = append(labels, m[1])
		}
		documented[strings.Trim(row[0], "`")] = labels
	}
	found := sourceMetrics(t)
	if len(found) == 0 {
		t.Fatal("no metrics found under pkg/: the test no longer matches the source")
	}
	for _, m := range found {
		labels, ok := documented[m.name]
		switch {
		case !ok:
			t.Errorf("metric %s (%s) is not in the Metrics table of docs/reference.md", m.name, m.pos)
		case !slices.Equal(labels, m.labels):
			t.Errorf("metric %s: the table lists labels %v, the source has %v", m.name, labels, m.labels)
		}
		delete(documented, m.name)
	}
	for name := range documented {
		t.Errorf("docs/reference.md lists metric %s, which the source no longer registers", name)
	}
}

// TestMonitoringMetrics: every metric of the server's own that the chart's
// alerts and dashboard query is one the source registers (a histogram's
// _bucket, _count and _sum count as it); test/install checks the others,
// the generic server's, against a real scrape.
func TestMonitoringMetrics(t *testing.T) {
	used, err := framework.MonitoringMetrics()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, m := range sourceMetrics(t) {
		registered[m.name] = true
	}
	own := 0
	for _, name := range used {
		if !strings.HasPrefix(name, "kilo_mesh_") {
			continue
		}
		own++
		base := name
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && registered[b] {
				base = b
			}
		}
		if !registered[base] {
			t.Errorf("the chart's monitoring files query %s, which the server does not export", name)
		}
	}
	if own == 0 {
		t.Errorf("the chart's monitoring files query none of the server's metrics: %v", used)
	}
}

// TestReferenceRBAC: the table of users' permissions is what
// artifacts/deploy/user-roles.yaml gives the default roles view, edit and
// admin (through their aggregation labels).
func TestReferenceRBAC(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "artifacts", "deploy", "user-roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// want[resource][role] is the set of verbs.
	want := map[string]map[string][]string{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		var role rbacv1.ClusterRole
		if err := dec.Decode(&role); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if role.Kind == "" {
			continue
		}
		for _, defaultRole := range []string{"view", "edit", "admin"} {
			if role.Labels["rbac.authorization.k8s.io/aggregate-to-"+defaultRole] != "true" {
				continue
			}
			for _, rule := range role.Rules {
				for _, res := range rule.Resources {
					if want[res] == nil {
						want[res] = map[string][]string{}
					}
					want[res][defaultRole] = append(want[res][defaultRole], rule.Verbs...)
				}
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("no aggregated rules in user-roles.yaml")
	}
	sec := readSections(t, "reference.md")["RBAC"]
	if sec == nil {
		t.Fatal("reference.md has no section RBAC")
	}
	seen := map[string]bool{}
	for _, row := range tableRows(sec) {
		if len(row) != 4 {
			t.Fatalf("RBAC row %v: want resource, view, edit, admin", row)
		}
		res := strings.Trim(row[0], "`")
		seen[res] = true
		for i, role := range []string{"view", "edit", "admin"} {
			got := verbs(row[i+1])
			exp := slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(want[res][role])))))
			if !slices.Equal(got, exp) {
				t.Errorf("%s, %s: the table says %v, user-roles.yaml gives %v", res, role, got, exp)
			}
		}
	}
	for res := range want {
		if !seen[res] {
			t.Errorf("user-roles.yaml grants access to %s, which the RBAC table of docs/reference.md does not list", res)
		}
	}
}

func verbs(cell string) []string {
	var out []string
	for _, v := range strings.Split(cell, ",") {
		if v = strings.TrimSpace(v); v != "" && v != "-" {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
