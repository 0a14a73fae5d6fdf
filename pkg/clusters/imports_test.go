package clusters

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the member-cache layer below the planner: it reads
// member clusters and feeds the views and the reconciler, and never plans.
// Of this project's packages it may use only the API types and Kilo's node
// contract (pkg/apis), which know nothing of plans either, and the way to
// reach a member cluster (pkg/memberaccess), which knows nothing of caches,
// and the list its caches hand out (pkg/chunklist), which knows nothing at all.
func TestImports(t *testing.T) {
	const module = "github.com/kilo-mesh/kilo-mesh-apiserver/"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, module) && !strings.HasPrefix(path, module+"pkg/apis/") && path != module+"pkg/memberaccess" && path != module+"pkg/chunklist" {
				t.Errorf("%s imports %s: pkg/clusters may import only pkg/apis, pkg/memberaccess and pkg/chunklist of this module", name, path)
			}
		}
	}
}
