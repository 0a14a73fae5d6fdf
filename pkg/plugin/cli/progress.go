package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// ProgressLine keeps one line of progress: rewritten in place on a
// terminal, else printed whenever it changes (logs of CI jobs).
type ProgressLine struct {
	w    io.Writer
	tty  bool
	last string
}

// NewProgressLine returns a progress line on w.
func NewProgressLine(w io.Writer) *ProgressLine {
	f, ok := w.(*os.File)
	return &ProgressLine{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
}

// Show replaces the line with s.
func (p *ProgressLine) Show(s string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", s)
		return
	}
	// Without a terminal the elapsed time alone is no news.
	if key := withoutElapsed(s); key != p.last {
		p.last = key
		fmt.Fprintln(p.w, s)
	}
}

// Done clears the line on a terminal.
func (p *ProgressLine) Done() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// withoutElapsed drops the "(12s)" of a progress line.
func withoutElapsed(s string) string {
	before, rest, ok := strings.Cut(s, "(")
	if !ok {
		return s
	}
	_, after, ok := strings.Cut(rest, ")")
	if !ok {
		return s
	}
	return before + after
}
