// Package transcripts keeps the terminal sessions the docs show true: a
// test runs every command of docs/tutorial.md's console blocks against
// `make run`, in order, and compares what it prints with what the page
// shows; the README's tour runs there too. Here is what the test needs
// besides an environment: reading the blocks, telling output that varies
// from run to run (times, ports, keys, allocated addresses) from what must
// stay, and writing real output back into the page.
package transcripts

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Step is one command of a console block and what the page shows it printing.
type Step struct {
	Command string
	Output  []string
}

// Block is a console block of a page: its steps, the lines it spans
// (the fences excluded) and the exit code the page shows after it, as
// "(exit code N)" on the line after the closing fence (0 without).
type Block struct {
	Start, End int // lines[Start:End] are the block's content
	Indent     string
	Steps      []Step
	ExitCode   int
}

var exitCodeLine = regexp.MustCompile(`^\(exit code (\d+)\)$`)

// ConsoleBlocks reads the ```console blocks of a page. A line starting with
// "$ " is a command (a trailing backslash continues it); the lines up to the
// next command are its output.
func ConsoleBlocks(page string) ([]Block, error) {
	lines := strings.Split(page, "\n")
	var out []Block
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if trimmed != "```console" {
			continue
		}
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]
		b := Block{Start: i + 1, Indent: indent}
		j := i + 1
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			l := strings.TrimPrefix(lines[j], indent)
			switch {
			case strings.HasPrefix(l, "$ "):
				cmd := strings.TrimPrefix(l, "$ ")
				for strings.HasSuffix(cmd, `\`) && j+1 < len(lines) {
					j++
					cmd += "\n" + strings.TrimPrefix(lines[j], indent)
				}
				b.Steps = append(b.Steps, Step{Command: cmd})
			case len(b.Steps) == 0:
				return nil, fmt.Errorf("line %d: console block output before any command", j+1)
			default:
				s := &b.Steps[len(b.Steps)-1]
				s.Output = append(s.Output, l)
			}
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: console block not closed", i+1)
		}
		b.End = j
		if j+1 < len(lines) {
			if m := exitCodeLine.FindStringSubmatch(strings.TrimSpace(lines[j+1])); m != nil {
				b.ExitCode, _ = strconv.Atoi(m[1])
			}
		}
		if len(b.Steps) == 0 {
			return nil, fmt.Errorf("line %d: console block without a command", i+1)
		}
		out = append(out, b)
		i = j
	}
	return out, nil
}

// Rewrite returns page with each block's content replaced by its steps
// (commands as given, outputs as the steps now hold them).
func Rewrite(page string, blocks []Block) string {
	lines := strings.Split(page, "\n")
	var out []string
	next := 0
	for _, b := range blocks {
		out = append(out, lines[next:b.Start]...)
		for _, s := range b.Steps {
			for k, l := range strings.Split(s.Command, "\n") {
				if k == 0 {
					l = "$ " + l
				}
				out = append(out, b.Indent+l)
			}
			for _, l := range s.Output {
				out = append(out, strings.TrimRight(b.Indent+l, " \t"))
			}
		}
		next = b.End
	}
	return strings.Join(append(out, lines[next:]...), "\n")
}

// variable are the parts of a command's output that differ between runs of
// the same steps, each replaced by a placeholder before outputs are
// compared; everything else must match, up to runs of blanks (columns
// widen with their values).
var variable = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "<time>"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`), "<clock>"},
	{regexp.MustCompile(`\b(gitVersion|gitCommit|buildDate)=\S+`), "$1=<stamp>"},
	{regexp.MustCompile(`\b127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
	// WireGuard keys, base64 of 32 bytes.
	{regexp.MustCompile(`[A-Za-z0-9+/]{43}=`), "<key>"},
	// Durations: ages, how long a step took.
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m|h|d)(\d+(\.\d+)?(ms|s|m|h))*\b`), "<duration>"},
	// ClusterIPs the members' kube-apiservers allocate: an address of a
	// service network (10.X3.0.0/16) that is not the network itself.
	{regexp.MustCompile(`\b10\.[4-9]3\.\d{1,3}\.\d{1,3}(/\d+)?\b`), ""},
	// Names the EndpointSlice controller generates: the Service's and five
	// random characters.
	{regexp.MustCompile(`(endpointslice\.discovery\.k8s\.io/[a-z0-9-]+)-[bcdfghjklmnpqrstvwxz2456789]{5}\b`), "$1-<random>"},
}

var blanks = regexp.MustCompile(`[ \t]+`)

// Normalize replaces what varies between runs in output by placeholders and
// collapses blanks, so that two runs of the same steps compare equal.
func Normalize(output []string) string {
	text := strings.Join(output, "\n")
	for _, v := range variable {
		if v.with != "" {
			text = v.re.ReplaceAllString(text, v.with)
			continue
		}
		text = v.re.ReplaceAllStringFunc(text, func(ip string) string {
			if strings.Contains(ip, "/") || strings.HasSuffix(ip, ".0.0") {
				return ip
			}
			return "<service-ip>"
		})
	}
	var out []string
	for _, l := range strings.Split(text, "\n") {
		out = append(out, strings.TrimSpace(blanks.ReplaceAllString(l, " ")))
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

// Paths maps the directories of a run to what the page shows for them, so
// that the output written into the page names no machine's paths.
type Paths [][2]string

// progressLine is a line of `kubectl mesh`'s progress (cli.Poll): rewritten
// in place and erased at the end on a terminal, printed on every change of
// its status elsewhere, so how many there are depends on timing.
var progressLine = regexp.MustCompile(`^waiting for .+ \(\d+[0-9.a-zµ]*\): `)

// Display rewrites the paths of one run's output as the page shows them,
// and leaves out the progress lines a terminal erases.
func (p Paths) Display(output string) []string {
	for _, r := range p {
		if r[0] != "" {
			output = strings.ReplaceAll(output, r[0], r[1])
		}
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(output, "\n"), "\n") {
		if !progressLine.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// readOnly says whether a command changes nothing, so that it may be run
// again until the state it shows has settled: the mesh server acts on
// changes asynchronously, as a reader of the page would find a moment later.
func readOnly(command string) bool {
	first := strings.Fields(command)
	if len(first) < 2 {
		return false
	}
	if strings.Contains(command, "--dry-run") {
		return true
	}
	switch first[0] {
	case "grep", "cat", "head":
		return true
	case "kubectl":
	default:
		return false
	}
	switch first[1] {
	case "get", "auth", "describe", "explain", "api-resources":
		return true
	case "mesh":
		if len(first) > 2 {
			switch first[2] {
			case "status", "plan", "peers", "why", "services", "graph", "version":
				return true
			}
		}
	}
	return false
}
