package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pages are the user docs: every page of docs/ and the README.
func pages(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range append(files, filepath.Join("..", "README.md")) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(data)
	}
	if len(out) < 5 {
		t.Fatalf("found %d pages: the test no longer reads docs/", len(out))
	}
	return out
}

// issueRef is a claim naming an issue of the tracker: a user reads the
// docs without it, and the numbers say nothing outside the team.
var issueRef = regexp.MustCompile(`(?i)\bissues?[ -]#?\d+|\bissue-\d+|(^|[\s(])#\d+\b`)

// TestNoIssueNumbers: no page names an issue number.
func TestNoIssueNumbers(t *testing.T) {
	for name, text := range pages(t) {
		for i, line := range strings.Split(text, "\n") {
			if m := issueRef.FindString(line); m != "" {
				t.Errorf("%s:%d names an issue (%q): say what it is instead", name, i+1, strings.TrimSpace(m))
			}
		}
	}
}

var pageLink = regexp.MustCompile(`\]\(docs/([a-z0-9-]+\.md)\)`)

// TestReadmeIndexesEveryPage: the README's Documentation section links
// every page of docs/ once, with a line of what it answers, and nothing
// that is not there.
func TestReadmeIndexesEveryPage(t *testing.T) {
	readme := pages(t)["README.md"]
	_, section, ok := strings.Cut(readme, "\n## Documentation\n")
	if !ok {
		t.Fatal("README.md has no section Documentation")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	indexed := map[string]int{}
	for _, line := range strings.Split(section, "\n") {
		m := pageLink.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indexed[m[1]]++
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) < 2 || len(strings.Fields(cells[len(cells)-1])) < 5 {
			t.Errorf("README.md's index lists docs/%s without a line of what it answers", m[1])
		}
	}
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		switch indexed[f] {
		case 0:
			t.Errorf("docs/%s is not in README.md's Documentation index: add a row saying what it answers", f)
		case 1:
		default:
			t.Errorf("docs/%s is in README.md's index %d times", f, indexed[f])
		}
		delete(indexed, f)
	}
	for f := range indexed {
		t.Errorf("README.md's index links docs/%s, which does not exist", f)
	}
}

// repoPath is a path of this repository as the pages write them, in
// backquotes or as a link.
var repoPath = regexp.MustCompile("(?:`|\\]\\()((?:\\.\\./)*(?:cmd|pkg|artifacts|hack|test|docs|\\.github)/[^`)\\s]*)[`)]")

// testName is a test or benchmark a page names.
var testName = regexp.MustCompile(`\b((?:Test|Benchmark)[A-Z][A-Za-z0-9_]*)`)

// fileName is a file a page names without its directory.
var fileName = regexp.MustCompile("`([A-Za-z0-9_.-]+\\.(?:go|sh))`")

// makeTarget is a make target a page names.
var makeTarget = regexp.MustCompile("`make ([a-z][a-z0-9-]*)")

// TestPagesNameWhatExists: every path of the repository a page names
// exists, and every file it names without a directory somewhere; every test
// or benchmark it names is a function of some test file, and every
// `make X` is a target of the Makefile, so that renaming one of them cannot
// leave a page pointing at nothing.
func TestPagesNameWhatExists(t *testing.T) {
	funcs, files := testFunctions(t)
	makefile, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range pages(t) {
		for _, m := range repoPath.FindAllStringSubmatch(text, -1) {
			p, _, _ := strings.Cut(m[1], "#")
			if strings.ContainsAny(p, "<*{$") || strings.Contains(p, "...") {
				continue // a pattern, not a path
			}
			root := ".." // paths are the repository's, links the page's
			if name != "README.md" && strings.HasPrefix(m[0], "](") {
				root = "."
			}
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s names %s, which does not exist", name, p)
			}
		}
		for _, m := range fileName.FindAllStringSubmatch(text, -1) {
			if !files[m[1]] {
				t.Errorf("%s names %s, which is no file of the repository", name, m[1])
			}
		}
		for _, m := range testName.FindAllStringSubmatch(text, -1) {
			if !funcs[m[1]] {
				t.Errorf("%s names %s, which no test file defines", name, m[1])
			}
		}
		for _, m := range makeTarget.FindAllStringSubmatch(text, -1) {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `:`).Match(makefile) {
				t.Errorf("%s names `make %s`, which the Makefile has no target for", name, m[1])
			}
		}
	}
}

// testFunctions are the names of the functions of every test file of the
// repository, and the names of its files.
func testFunctions(t *testing.T) (map[string]bool, map[string]bool) {
	t.Helper()
	out, files := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && slices.Contains([]string{".git", "_output", "bin", "node_modules"}, d.Name()) {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files[d.Name()] = true
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
				out[fn.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found %d test functions: the test no longer reads the tree", len(out))
	}
	return out, files
}

var alertRule = regexp.MustCompile(`(?m)^\s*-?\s*alert:\s*(\S+)`)

// TestAlertsDocumented: every alert the chart ships is named, in
// backquotes, on some page, where an operator paged by it looks it up.
func TestAlertsDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "artifacts", "charts", "kilo-mesh-apiserver", "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	alerts := alertRule.FindAllStringSubmatch(string(data), -1)
	if len(alerts) == 0 {
		t.Fatal("no alert in the chart's files/alerts.yaml: the test no longer reads it")
	}
	all := ""
	for _, text := range pages(t) {
		all += text
	}
	for _, a := range alerts {
		if !strings.Contains(all, "`"+a[1]+"`") {
			t.Errorf("the chart's alert %s is named on no page: say what it means and what to do", a[1])
		}
	}
}

var metricName = regexp.MustCompile(`\bkilo_mesh_[a-z0-9_]+`)

// TestPagesNameRealMetrics: every metric of the server's own a page names
// is one the source registers (a histogram's _bucket, _count and _sum
// count as it), so that a renamed metric cannot leave an alert or a
// figure's explanation reading nothing.
func TestPagesNameRealMetrics(t *testing.T) {
	registered := map[string]bool{}
	for _, m := range sourceMetrics(t) {
		registered[m.name] = true
	}
	for name, text := range pages(t) {
		for _, m := range metricName.FindAllString(text, -1) {
			base := m
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if b, ok := strings.CutSuffix(m, suffix); ok && registered[b] {
					base = b
				}
			}
			if !registered[base] {
				t.Errorf("%s names the metric %s, which the server does not register", name, m)
			}
		}
	}
}
