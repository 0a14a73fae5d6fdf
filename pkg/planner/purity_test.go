package planner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPurity keeps the planner and the services computation what the
// views and the reconciler rely on: no I/O, no goroutines, no clock of
// their own, and only the allowed imports.
func TestPurity(t *testing.T) {
	for _, pkg := range []struct {
		dir     string
		allowed []string // import path prefixes
	}{
		{".", []string{
			"k8s.io/api/core/v1",
			"k8s.io/apimachinery/",
			"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/",
			"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist\x00",
		}},
		// The lists plans and their input are held in: the standard library only.
		{"../chunklist", nil},
		// The services computation reads and writes EndpointSlices and the
		// Multi-Cluster Services API's objects, and takes the planner's
		// ownership labels.
		{"services", []string{
			"k8s.io/api/core/v1",
			"k8s.io/api/discovery/v1",
			"k8s.io/apimachinery/",
			"sigs.k8s.io/mcs-api/pkg/apis/v1beta1",
			"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/",
			"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner\x00", // exactly, not its subpackages
		}},
	} {
		t.Run(pkg.dir, func(t *testing.T) { checkPurity(t, pkg.dir, pkg.allowed) })
	}
}

func checkPurity(t *testing.T, dir string, allowed []string) {
	forbiddenStd := map[string]bool{"os": true, "io/ioutil": true, "net/http": true, "os/exec": true, "syscall": true, "unsafe": true, "sync": true}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
			ok := std && !forbiddenStd[path]
			for _, prefix := range allowed {
				ok = ok || strings.HasPrefix(path+"\x00", prefix)
			}
			if !ok {
				t.Errorf("%s imports %s", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a goroutine at %s", name, fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && (x.Name == "time" && (n.Sel.Name == "Now" || n.Sel.Name == "Since" || n.Sel.Name == "Until") ||
					x.Name == "metav1" && n.Sel.Name == "Now") {
					t.Errorf("%s: %s.%s at %s; the time is an input", name, x.Name, n.Sel.Name, fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatalf("no source file in %s: the test no longer matches the tree", dir)
	}
}
