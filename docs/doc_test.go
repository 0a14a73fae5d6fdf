// Package docs holds no code: its tests keep the reference pages true to the
// source, so that a reason, metric or permission cannot be added or renamed
// without the page that explains it.
package docs

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goConst is a string constant of the source.
type goConst struct {
	name, typ, value, pos string
}

// sourceFiles parses the non-test Go files of dir (relative to the
// repository root).
func sourceFiles(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []*ast.File
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return fset, out
}

// stringConstants parses the non-test Go files of dir (relative to the
// repository root) and returns their string constants, resolving constants
// defined as other constants of the package.
func stringConstants(t *testing.T, dir string) []goConst {
	t.Helper()
	fset, files := sourceFiles(t, dir)
	type spec struct {
		name, typ, pos string
		expr           ast.Expr
	}
	var specs []spec
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						specs = append(specs, spec{name.Name, typ, fset.Position(name.Pos()).String(), vs.Values[i]})
					}
				}
			}
		}
	}
	exprs := map[string]ast.Expr{}
	for _, s := range specs {
		exprs[s.name] = s.expr
	}
	var value func(e ast.Expr, depth int) (string, bool)
	value = func(e ast.Expr, depth int) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			v, err := strconv.Unquote(e.Value)
			return v, err == nil
		case *ast.Ident:
			if next, ok := exprs[e.Name]; ok && depth < 10 {
				return value(next, depth+1)
			}
		case *ast.CallExpr: // a conversion, Reason("X")
			if len(e.Args) == 1 {
				return value(e.Args[0], depth+1)
			}
		}
		return "", false
	}
	var out []goConst
	for _, s := range specs {
		if v, ok := value(s.expr, 0); ok {
			out = append(out, goConst{name: s.name, typ: s.typ, value: v, pos: s.pos})
		}
	}
	return out
}

// section is a "## " part of a markdown page.
type section struct {
	title string
	// entries are its "### " headings; an entry "`X`" is X.
	entries []string
	body    []string
}

// readSections splits a markdown page into its "## " sections, ignoring
// fenced code.
func readSections(t *testing.T, page string) map[string]*section {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*section{}
	var cur *section
	fenced := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		switch {
		case fenced:
		case strings.HasPrefix(line, "## "):
			title := strings.TrimSpace(strings.TrimPrefix(line, "## "))
			if out[title] != nil {
				t.Fatalf("%s: two sections %q", page, title)
			}
			cur = &section{title: title}
			out[title] = cur
			continue
		case strings.HasPrefix(line, "### ") && cur != nil:
			cur.entries = append(cur.entries, strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "### ")), "`"))
		}
		if cur != nil {
			cur.body = append(cur.body, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
