package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

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

// ErrTimedOut is Poll's error when its timeout passed first.
var ErrTimedOut = errors.New("timed out")

// Poll calls check every interval until it is done or fails, or timeout
// passes (ErrTimedOut), keeping one progress line on w: what, the time
// so far, and the status check last gave (status until its first call),
// which Poll returns.
func Poll(ctx context.Context, w io.Writer, what, status string, interval, timeout time.Duration,
	check func(context.Context) (done bool, status string, err error)) (string, error) {
	line := NewProgressLine(w)
	defer line.Done()
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		line.Show(fmt.Sprintf("%s (%s): %s", what, time.Since(start).Round(time.Second), status))
		select {
		case <-ctx.Done():
			return status, ctx.Err()
		case <-deadline.C:
			return status, ErrTimedOut
		case <-tick.C:
		}
		done, s, err := check(ctx)
		status = s
		if done || err != nil {
			return status, err
		}
	}
}
