package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

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
	doc, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "\n## Flags\n")
	if start < 0 {
		t.Fatal("docs/reference.md has no section Flags")
	}
	section = section[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(section, -1) {
		named[m[1]] = true
	}

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

// TestReferenceSnapshotFlags: the snapshot section of docs/reference.md
// names every flag of `snapshot save` and `snapshot restore`, and no other.
func TestReferenceSnapshotFlags(t *testing.T) {
	doc, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "\n## kilo-mesh-apiserver snapshot\n")
	if start < 0 {
		t.Fatal("docs/reference.md has no section kilo-mesh-apiserver snapshot")
	}
	section = section[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(section, -1) {
		named[m[1]] = true
	}
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
