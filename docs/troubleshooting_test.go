package docs

import (
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// reasonSources are the reasons the server reports, where their constants
// are defined, and the section of troubleshooting.md that explains them.
var reasonSources = []struct {
	section string
	dir     string
	match   func(c goConst) bool
}{
	{"Node reasons", "pkg/planner", prefixed("Reason")},
	{"Node notes", "pkg/planner", prefixed("Note")},
	{"Conflicts", "pkg/planner", prefixed("Conflict")},
	{"Warnings", "pkg/planner", prefixed("Warning")},
	{"Kept Peers", "pkg/planner", prefixed("Kept")},
	{"Member cluster reasons", "pkg/memberaccess", func(c goConst) bool { return c.typ == "Reason" }},
	{"Conditions", "pkg/apis/mesh/v1alpha1", prefixed("Condition")},
	{"Condition reasons", "pkg/reconciler", prefixed("Reason")},
	{"Host access reasons", "pkg/planner", prefixed("HostReason")},
	{"Relay reasons", "pkg/planner", func(c goConst) bool { return prefixed("RelayRefused")(c) || prefixed("PathReason")(c) }},
	{"Events", "pkg/reconciler", prefixed("Event")},
	{"Service endpoint reasons", "pkg/planner/services", prefixed("LeftOut")},
	{"Service import reasons", "pkg/planner/services", prefixed("Blocked")},
}

func prefixed(p string) func(goConst) bool {
	return func(c goConst) bool { return strings.HasPrefix(c.name, p) }
}

// TestTroubleshootingCoversEveryReason: every reason constant has an entry
// ("### `Value`") in its section of troubleshooting.md, and every entry of
// those sections is a reason the server still has.
func TestTroubleshootingCoversEveryReason(t *testing.T) {
	sections := readSections(t, "troubleshooting.md")
	for _, src := range reasonSources {
		t.Run(src.section, func(t *testing.T) {
			sec := sections[src.section]
			if sec == nil {
				t.Fatalf("troubleshooting.md has no section %q", src.section)
			}
			values := map[string]bool{}
			for _, c := range stringConstants(t, src.dir) {
				if !src.match(c) {
					continue
				}
				values[c.value] = true
				if !slices.Contains(sec.entries, c.value) {
					t.Errorf("%s = %q (%s) is not documented: add \"### `%s`\" to the section %q of docs/troubleshooting.md, saying what it means and how to fix it",
						c.name, c.value, c.pos, c.value, src.section)
				}
			}
			if len(values) == 0 {
				t.Fatalf("no constants found in %s for %q: the test no longer matches the source", src.dir, src.section)
			}
			for _, e := range sec.entries {
				if !values[e] {
					t.Errorf("section %q documents %q, which %s no longer defines", src.section, e, src.dir)
				}
			}
			if dup := duplicates(sec.entries); len(dup) > 0 {
				t.Errorf("section %q documents %v twice", src.section, dup)
			}
		})
	}
}

// TestConditionTypesListsEveryCondition: the list clients show
// (meshv1alpha1.ConditionTypes: kubectl mesh status and its help) holds
// every condition constant the API defines, once.
func TestConditionTypesListsEveryCondition(t *testing.T) {
	var want []string
	for _, c := range stringConstants(t, "pkg/apis/mesh/v1alpha1") {
		if strings.HasPrefix(c.name, "Condition") {
			want = append(want, c.value)
		}
	}
	if len(want) == 0 {
		t.Fatal("no Condition constants found in pkg/apis/mesh/v1alpha1: the test no longer matches the source")
	}
	got := slices.Clone(meshv1alpha1.ConditionTypes)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("meshv1alpha1.ConditionTypes holds %v, the constants are %v", got, want)
	}
}

func duplicates(items []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, i := range items {
		if seen[i] {
			out = append(out, i)
		}
		seen[i] = true
	}
	return out
}
