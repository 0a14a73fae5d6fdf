package docs

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// packagePath is a path of this repository under pkg or cmd, as the
// architecture page writes them.
var packagePath = regexp.MustCompile(`\b(?:pkg|cmd)(?:/[A-Za-z0-9_.-]+)+`)

// TestArchitectureNamesEveryPackage: the package graph of architecture.md
// (its first fenced block) names every Go package under pkg and cmd, and
// names no path that is gone, so that it cannot fall behind the code.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(string(data), "```", 3)
	if len(parts) < 3 {
		t.Fatal("architecture.md has no fenced block: the package graph is gone")
	}
	named := map[string]bool{}
	for _, p := range packagePath.FindAllString(parts[1], -1) {
		named[strings.TrimRight(p, ".")] = true
	}
	for p := range named {
		if fi, err := os.Stat(filepath.Join("..", p)); err != nil || !fi.IsDir() {
			t.Errorf("architecture.md's package graph names %s, which does not exist", p)
		}
	}
	var packages int
	for _, top := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join("..", top), func(dir string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if _, err := build.ImportDir(dir, 0); err != nil {
				var none *build.NoGoError
				if errors.As(err, &none) {
					return nil // a directory of directories, or of tests only
				}
				return err
			}
			packages++
			rel, err := filepath.Rel("..", dir)
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !named[rel] {
				t.Errorf("architecture.md's package graph does not name %s: add it, with what imports it", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if packages < 10 {
		t.Fatalf("found %d packages under pkg and cmd: the test no longer matches the tree", packages)
	}
}
