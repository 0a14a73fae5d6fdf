package docs

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReferenceTableColumns: every column of the tables the server prints
// (metav1.TableColumnDefinition under pkg/registry: the meshes, the grants
// and the views) is named in reference.md as kubectl prints it, `NAME`.
func TestReferenceTableColumns(t *testing.T) {
	data, err := os.ReadFile("reference.md")
	if err != nil {
		t.Fatal(err)
	}
	ref := string(data)
	var dirs []string
	err = filepath.WalkDir(filepath.Join("..", "pkg", "registry"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			rel, _ := filepath.Rel("..", p)
			dirs = append(dirs, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, dir := range dirs {
		fset, files := sourceFiles(t, dir)
		for _, f := range files {
			file := fset.Position(f.Pos()).Filename
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				for _, e := range lit.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if key, ok := kv.Key.(*ast.Ident); !ok || key.Name != "Name" || !hasField(lit, "Description") {
						continue
					}
					b, ok := kv.Value.(*ast.BasicLit)
					if !ok || b.Kind != token.STRING {
						continue
					}
					name, _ := strconv.Unquote(b.Value)
					found++
					if col := "`" + strings.ToUpper(name) + "`"; !strings.Contains(ref, col) {
						t.Errorf("%s prints a column %s that reference.md does not name", filepath.Base(file), col)
					}
				}
				return true
			})
		}
	}
	if found < 20 {
		t.Fatalf("found %d table columns under pkg/registry: the test no longer matches the source", found)
	}
}

// hasField reports whether a composite literal sets field.
func hasField(lit *ast.CompositeLit, field string) bool {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == field {
				return true
			}
		}
	}
	return false
}
