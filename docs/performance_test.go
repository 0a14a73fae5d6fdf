package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// heading is a markdown heading of a page, outside fenced code.
type heading struct {
	level int
	slug  string
	line  int
}

var notSlug = regexp.MustCompile(`[^a-z0-9 _-]`)

// slug is GitHub's anchor of a heading's text.
func slug(title string) string {
	return strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(title)), ""), " ", "-")
}

func headings(lines []string) []heading {
	var out []heading
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		level := len(l) - len(strings.TrimLeft(l, "#"))
		out = append(out, heading{level: level, slug: slug(strings.TrimLeft(l, "# ")), line: i})
	}
	return out
}

var (
	tableLink = regexp.MustCompile(`^\[[^\]]+\]\(#([a-z0-9_-]+)\)$`)
	codeSpan  = regexp.MustCompile("`([^`]+)`")
)

// TestPerformanceTable: performance.md opens with one table of the current
// figures, each row saying what, the figure, the command that prints it,
// the conditions, and a link to the section about it; the command appears
// in that section. New figures get a row of the same shape.
func TestPerformanceTable(t *testing.T) {
	data, err := os.ReadFile("performance.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	hs := headings(lines)
	if len(hs) < 3 || hs[0].level != 1 || hs[1].slug != "current-figures" {
		t.Fatal(`performance.md must open with its title and then "## Current figures"`)
	}
	sectionOf := map[string]string{}
	for i, h := range hs {
		end := len(lines)
		for _, next := range hs[i+1:] {
			if next.level <= h.level {
				end = next.line
				break
			}
		}
		sectionOf[h.slug] = strings.Join(lines[h.line:end], "\n")
	}
	table := strings.Split(sectionOf["current-figures"], "\n")
	var rows [][]string
	header := false
	for _, l := range table {
		if !strings.HasPrefix(l, "|") {
			if len(rows) > 0 || header {
				if strings.TrimSpace(l) != "" {
					break // the one table has ended
				}
			}
			continue
		}
		// Cells split on | but not on an escaped \| inside a command.
		cells := strings.Split(strings.ReplaceAll(strings.Trim(l, "|"), `\|`, "\x00"), "|")
		for i := range cells {
			cells[i] = strings.ReplaceAll(strings.TrimSpace(cells[i]), "\x00", "|")
		}
		switch {
		case !header:
			if strings.Join(cells, ",") != "what,figure,command,conditions,details" {
				t.Fatalf("the table's columns are %v, want what, figure, command, conditions, details", cells)
			}
			header = true
		case strings.HasPrefix(cells[0], "---"):
		default:
			rows = append(rows, cells)
		}
	}
	if len(rows) < 10 {
		t.Fatalf("the table of current figures has %d rows", len(rows))
	}
	for _, r := range rows {
		if len(r) != 5 {
			t.Errorf("row %v: want 5 cells", r)
			continue
		}
		for i, col := range []string{"what", "figure", "command", "conditions"} {
			if r[i] == "" {
				t.Errorf("row %q has no %s", r[0], col)
			}
		}
		m := tableLink.FindStringSubmatch(r[4])
		if m == nil {
			t.Errorf("row %q: details %q is not a link to a section of the page, [Name](#anchor)", r[0], r[4])
			continue
		}
		section, ok := sectionOf[m[1]]
		if !ok {
			t.Errorf("row %q links #%s, which is no heading of performance.md", r[0], m[1])
			continue
		}
		cmds := codeSpan.FindAllStringSubmatch(r[2], -1)
		if len(cmds) == 0 {
			t.Errorf("row %q: the command is not in backquotes", r[0])
		}
		for _, c := range cmds {
			if !strings.Contains(section, c[1]) && !strings.Contains(section, firstLine(c[1])) {
				t.Errorf("row %q: its command %q is not in the section #%s it links", r[0], c[1], m[1])
			}
		}
	}
}

// firstLine is a command before any &&: a section may give its steps on
// lines of their own.
func firstLine(cmd string) string {
	before, _, _ := strings.Cut(cmd, " && ")
	return before
}

// TestPerformanceCommandsRunFromACheckout: no command of the performance
// pages reads or writes a file outside the checkout (a binary left in
// /tmp by whoever measured is not there for the reader).
func TestPerformanceCommandsRunFromACheckout(t *testing.T) {
	for _, page := range []string{"performance.md", "performance-history.md"} {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, "/tmp/") {
				t.Errorf("%s:%d: %s: name a file of the checkout, not /tmp", page, i+1, strings.TrimSpace(l))
			}
		}
	}
}
