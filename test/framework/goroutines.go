package framework

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// modulePath prefixes the functions of this repository in a goroutine dump.
const modulePath = "github.com/kilo-mesh/kilo-mesh-apiserver/"

// maxHeldByLines bounds the summary of a goroutine dump in an error, and
// maxFrames the frames shown of each goroutine: the innermost, where it waits.
const (
	maxHeldByLines = 200
	maxFrames      = 12
)

// heldBy summarizes the goroutine dump that a Go process wrote to its log
// (at or after offset) on SIGQUIT: the main goroutine, those running code
// of this repository and those serving a request (an HTTP server's shutdown
// waits for them), identical stacks counted once, functions only. Those are
// where a process that does not exit waits; the whole dump stays in the log.
func heldBy(logPath string, offset int64) string {
	f, err := os.Open(logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", logPath, err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", logPath, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", logPath, err)
	}
	summary, ok := summarizeGoroutines(string(data))
	if !ok {
		return "(no goroutine dump in the log; its last lines:)\n" + tailFile(logPath, 40)
	}
	return summary
}

// What differs between otherwise identical goroutines: a frame's arguments,
// "(0xc000123, ...)", the wait, ", 3 minutes", the numbers of the goroutine
// and of its creator.
var (
	goroutineArgs = regexp.MustCompile(`\([^()]*\)$`)
	goroutineWait = regexp.MustCompile(`, \d+ minutes?\]`)
	goroutineHead = regexp.MustCompile(`^goroutine \d+ (gp=\S+ m=\S+ (mp=\S+ )?)?`)
	goroutineFrom = regexp.MustCompile(` in goroutine \d+$`)
)

// summarizeGoroutines is heldBy's summary of dump, false if it holds no
// goroutine.
func summarizeGoroutines(dump string) (string, bool) {
	i := strings.Index(dump, "\ngoroutine ")
	if i < 0 {
		return "", false
	}
	type stack struct {
		text  string
		count int
	}
	var order []string
	stacks := map[string]*stack{}
	total := 0
	for _, block := range strings.Split(dump[i+1:], "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if !strings.HasPrefix(lines[0], "goroutine ") {
			continue
		}
		total++
		main := strings.HasPrefix(lines[0], "goroutine 1 ")
		shown := false
		out := []string{goroutineWait.ReplaceAllString(goroutineHead.ReplaceAllString(lines[0], "goroutine "), "]")}
		frames := 0
		for j := 1; j < len(lines); j++ {
			l := lines[j]
			// The runtime's frames under every waiting goroutine say
			// nothing the header's state does not.
			if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "runtime.") {
				continue
			}
			shown = shown || strings.Contains(l, modulePath) || strings.Contains(l, ".ServeHTTP(")
			frame := goroutineFrom.ReplaceAllString(goroutineArgs.ReplaceAllString(l, ""), "")
			if j+1 < len(lines) && strings.HasPrefix(lines[j+1], "\t") {
				frame += " " + frameLine(lines[j+1])
			}
			if frames++; frames <= maxFrames || strings.HasPrefix(l, "created by ") {
				out = append(out, "  "+frame)
			} else if frames == maxFrames+1 {
				out = append(out, "  ...")
			}
		}
		if !main && !shown {
			continue
		}
		key := strings.Join(out, "\n")
		if s, ok := stacks[key]; ok {
			s.count++
			continue
		}
		stacks[key] = &stack{text: key, count: 1}
		order = append(order, key)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d goroutines; the main one, those in this repository's code and those serving a request:\n", total)
	lines := 1
	for _, key := range order {
		s := stacks[key]
		text := s.text
		if s.count > 1 {
			text = fmt.Sprintf("%d x %s", s.count, text)
		}
		n := strings.Count(text, "\n") + 1
		if lines+n > maxHeldByLines {
			b.WriteString("(more in the log)\n")
			break
		}
		lines += n
		b.WriteString(text + "\n")
	}
	return b.String(), true
}

// frameLine shortens a frame's location, "\t/path/to/file.go:123 +0x45",
// to "file.go:123".
func frameLine(l string) string {
	l = strings.TrimSpace(l)
	if i := strings.LastIndex(l, " +0x"); i >= 0 {
		l = l[:i]
	}
	return "(" + filepath.Base(l) + ")"
}

// fileSize is the size of the file at path, or 0.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
