package memberaccess

import (
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestFence keeps the way to a member cluster free of caches, and the
// plugin and admission free of the member caches: they check kubeconfigs,
// addresses and identities as the server does, with this package, and
// never start an informer. What the plugin and admission read of the
// caches comes through interfaces of their own, which pkg/apiserver fills.
func TestFence(t *testing.T) {
	const module = "github.com/kilo-mesh/kilo-mesh-apiserver/"
	for _, tc := range []struct {
		name      string
		packages  []string // go list patterns
		forbidden []string // import paths, each with the packages under it
	}{
		{"memberaccess", []string{module + "pkg/memberaccess"}, []string{
			module + "pkg/clusters", module + "pkg/plancache", module + "pkg/reconciler", module + "pkg/registry",
			"k8s.io/client-go/tools/cache", "k8s.io/client-go/informers",
		}},
		{"plugin and admission", []string{module + "pkg/plugin/...", module + "pkg/admission"}, []string{
			module + "pkg/clusters",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deps := dependencies(t, tc.packages)
			for _, path := range slices.Sorted(maps.Keys(deps)) {
				for _, f := range tc.forbidden {
					if path != f && !strings.HasPrefix(path, f+"/") {
						continue
					}
					var by []string
					for importer, theirs := range deps {
						if slices.Contains(theirs, path) {
							by = append(by, importer)
						}
					}
					slices.Sort(by)
					t.Errorf("%s depends on %s (imported by %s)", strings.Join(tc.packages, ", "), path, strings.Join(by, ", "))
				}
			}
		})
	}
}

// dependencies lists every package the patterns build with (themselves
// included, tests left out), each with its imports, as `go list -deps`
// sees them.
func dependencies(t *testing.T, patterns []string) map[string][]string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the fence reads dependencies with the go command, which is not on PATH: %v", err)
	}
	out, err := exec.Command(goCmd, append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, patterns...)...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		t.Fatalf("go list %v: %v", patterns, err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		deps[fields[0]] = fields[1:]
	}
	for _, p := range patterns {
		if _, ok := deps[strings.TrimSuffix(p, "/...")]; !ok {
			t.Fatalf("go list did not list %s: the fence no longer matches the tree", p)
		}
	}
	return deps
}
