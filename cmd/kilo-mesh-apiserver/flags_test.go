package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/logs"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apiserver"
)

// TestReferenceFlags keeps the Flags section of docs/reference.md true to
// the real flag set: every flag --help shows is named there and nothing
// else is, and
// each of the server's own flags (beyond the generic ones of
// k8s.io/apiserver and the logging ones) has a row with its default.
func TestReferenceFlags(t *testing.T) {
	section, named := referenceSection(t, "Flags")

	cmd := newCommand()
	real := pflag.NewFlagSet("real", pflag.ContinueOnError)
	real.AddFlagSet(cmd.Flags())
	real.AddFlagSet(cmd.PersistentFlags())
	generic := pflag.NewFlagSet("generic", pflag.ContinueOnError)
	apiserver.NewOptions().RecommendedOptions.AddFlags(generic)
	logs.AddFlags(generic)

	own := 0
	real.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			// Not in --help either; named or not.
			delete(named, f.Name)
			return
		}
		if !named[f.Name] {
			t.Errorf("--%s (%q) is not in the Flags section of docs/reference.md", f.Name, f.Usage)
		}
		delete(named, f.Name)
		if generic.Lookup(f.Name) != nil {
			return
		}
		own++
		row := regexp.MustCompile("(?m)^\\| `--" + regexp.QuoteMeta(f.Name) + "` \\| ([^|]*) \\|").FindStringSubmatch(section)
		want := "`" + f.DefValue + "`"
		if f.DefValue == "" {
			want = "`\"\"`"
		}
		switch {
		case row == nil:
			t.Errorf("--%s is the server's own flag: give it a row | `--%s` | default | meaning | in the table of its flags", f.Name, f.Name)
		case strings.TrimSpace(row[1]) != want:
			t.Errorf("--%s: the table's default is %s, the flag's is %s", f.Name, strings.TrimSpace(row[1]), want)
		}
	})
	for name := range named {
		t.Errorf("docs/reference.md names --%s, which the server does not take", name)
	}
	if own == 0 {
		t.Error("no flag of the server's own found: the test no longer tells them from the generic ones")
	}
}

// referenceSection returns the section title of docs/reference.md and the
// flags it names.
func referenceSection(t *testing.T, title string) (string, map[string]bool) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("docs/reference.md has no section %s", title)
	}
	section = section[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(section, -1) {
		named[m[1]] = true
	}
	return section, named
}

// TestReferenceSnapshotFlags: the snapshot section of docs/reference.md
// names every flag of `snapshot save` and `snapshot restore`, and no other.
func TestReferenceSnapshotFlags(t *testing.T) {
	_, named := referenceSection(t, "kilo-mesh-apiserver snapshot")
	real := map[string]bool{}
	for _, c := range newSnapshotCommand().Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) { real[f.Name] = true })
	}
	for name := range real {
		if !named[name] {
			t.Errorf("--%s of kilo-mesh-apiserver snapshot is not in its section of docs/reference.md", name)
		}
	}
	for name := range named {
		if !real[name] {
			t.Errorf("docs/reference.md's snapshot section names --%s, which the commands do not take", name)
		}
	}
}

// TestDocsFlagDefaults: wherever a page of docs/ or the README gives the
// default of one of the server's own flags ("`--flag` (default X",
// "`--flag`, default X", "default `--flag=X`"), it is the flag's default.
func TestDocsFlagDefaults(t *testing.T) {
	cmd := newCommand()
	real := pflag.NewFlagSet("real", pflag.ContinueOnError)
	real.AddFlagSet(cmd.Flags())
	real.AddFlagSet(cmd.PersistentFlags())
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	patterns := []*regexp.Regexp{
		regexp.MustCompile("`--([a-z0-9-]+)`,? \\(?default `?(\\d{1,3}(?:,\\d{3})+|[^),;`\\s]+)"),
		regexp.MustCompile("default `--([a-z0-9-]+)=([^`]+)`"),
	}
	checked := 0
	for _, page := range append(pages, "../../README.md") {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ") // claims wrap across lines
		for _, re := range patterns {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				f := real.Lookup(m[1])
				if f == nil {
					continue // another program's flag
				}
				checked++
				if !sameValue(m[2], f.DefValue) {
					t.Errorf("%s says the default of --%s is %q; it is %q", filepath.Base(page), m[1], m[2], f.DefValue)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no default of a flag found in the docs: the test no longer reads them")
	}
}

// sameValue compares a default as a page writes it (5,000; 24h) with the
// flag's (5000; 24h0m0s).
func sameValue(doc, flag string) bool {
	doc = strings.TrimSpace(doc)
	if d, err := time.ParseDuration(doc); err == nil {
		f, err := time.ParseDuration(flag)
		return err == nil && d == f
	}
	if n := strings.ReplaceAll(doc, ",", ""); regexp.MustCompile(`^\d+$`).MatchString(n) {
		return n == flag
	}
	return doc == flag
}
