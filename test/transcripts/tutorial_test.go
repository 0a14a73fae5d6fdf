//go:build e2e

package transcripts

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// UpdateEnv, set to 1, makes TestTutorial write what the commands print
// into docs/tutorial.md where it differs from what the page shows, instead
// of comparing; set to all, every output, so that the page shows one run.
// Review the diff.
const UpdateEnv = "KILO_MESH_UPDATE_TRANSCRIPTS"

const (
	// upMarker is the last line make run prints once everything is up.
	upMarker = "Press Ctrl-C to stop."
	// settle bounds how long a read-only command is run again until it
	// shows what the page shows (the server acts asynchronously).
	settle = 90 * time.Second
	// settleUpdate is the same when writing the page: the state a command
	// shows after that long is what it writes.
	settleUpdate = 20 * time.Second
)

// TestTutorial runs docs/tutorial.md as a reader would: `make run` with the
// page's flags, then every command of its console blocks, in order, each
// compared with the output the page shows (what varies between runs masked:
// see Normalize); and, right after make run, every command of the README's
// short tour, which must succeed.
func TestTutorial(t *testing.T) {
	update, all := os.Getenv(UpdateEnv) != "", os.Getenv(UpdateEnv) == "all"
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pagePath := filepath.Join(root, "docs", "tutorial.md")
	data, err := os.ReadFile(pagePath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	blocks, err := ConsoleBlocks(page)
	if err != nil {
		t.Fatalf("docs/tutorial.md: %v", err)
	}
	first := blocks[0].Steps[0]
	if !strings.HasPrefix(first.Command, "make run") || len(blocks[0].Steps) != 1 {
		t.Fatalf("docs/tutorial.md's first console block must be `make run` alone, is %q", first.Command)
	}
	if _, err := exec.LookPath("dot"); err != nil {
		t.Fatal("the tutorial draws the mesh with Graphviz's dot: apt-get install --no-install-recommends graphviz")
	}

	s := newSession(t, root)
	got := s.makeRun(t, first.Command)
	check(t, update, all, &blocks[0].Steps[0], got, 0, 0)

	t.Run("README tour", func(t *testing.T) { s.readmeTour(t, root) })

	for bi := range blocks {
		b := &blocks[bi]
		for si := range b.Steps {
			if bi == 0 && si == 0 {
				continue
			}
			st := &b.Steps[si]
			want := Normalize(st.Output)
			wantCode := 0
			if si == len(b.Steps)-1 {
				wantCode = b.ExitCode
			}
			limit := time.Duration(0)
			if readOnly(st.Command) {
				limit = settle
				if update {
					limit = settleUpdate
				}
			}
			out, code := s.runUntil(t, st.Command, limit, func(out []string, code int) bool {
				return code == wantCode && Normalize(out) == want
			})
			check(t, update, all, st, out, code, wantCode)
		}
	}
	if update {
		if err := os.WriteFile(pagePath, []byte(Rewrite(page, blocks)), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: review the diff", pagePath)
	}
}

// check compares one step's output with the page's, or, updating, takes it
// (all: even when they compare equal).
func check(t *testing.T, update, all bool, st *Step, out []string, code, wantCode int) {
	t.Helper()
	if code != wantCode {
		t.Errorf("$ %s\nexited %d, the page shows %d; it printed:\n%s", st.Command, code, wantCode, strings.Join(out, "\n"))
	}
	if update {
		// Only what changed: keeping the shown run's times and keys keeps the diff to review small.
		if all || Normalize(out) != Normalize(st.Output) {
			st.Output = out
		}
		return
	}
	if got, want := Normalize(out), Normalize(st.Output); got != want {
		t.Errorf("$ %s\nprints (normalized):\n%s\n\ndocs/tutorial.md shows (normalized):\n%s\n\n(%s=1 writes the real output into the page)",
			st.Command, got, want, UpdateEnv)
	}
}

// session is a reader's shell: the environment make run prints, a working
// directory of its own, and the paths the page shows in place of this
// machine's.
type session struct {
	root, dir, runHome string
	env                []string
	paths              Paths
}

func newSession(t *testing.T, root string) *session {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	// make run keeps its state under $XDG_CACHE_HOME/kilo-mesh-apiserver/run:
	// a directory of the test's own, never a developer's run; Go's build
	// cache stays where it is.
	cacheHome := t.TempDir()
	s := &session{root: root, dir: t.TempDir(), runHome: cacheHome}
	// A reader's shell, not a sub-make of make test-e2e: make would print
	// its directories, and pass its own flags on.
	var base []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains([]string{"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "GNUMAKEFLAGS"}, name) {
			base = append(base, kv)
		}
	}
	s.env = append(base,
		"XDG_CACHE_HOME="+cacheHome,
		"GOCACHE="+strings.TrimSpace(string(gocache)),
		"KUBECONFIG="+filepath.Join(cacheHome, "kilo-mesh-apiserver", "run", "kubeconfig"),
		"PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+framework.ToolsBinDir()+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	// The tools directory this test was given (its make target's, or CI's
	// own) stands for the reader's default one.
	tools := filepath.Join("~", ".cache", "kilo-mesh-apiserver", "tools-"+framework.KubeVersion, "bin")
	s.paths = Paths{{framework.ToolsBinDir(), tools}, {cacheHome, "~/.cache"}, {root, "$REPO"}, {s.dir, "."}, {home, "~"}}
	return s
}

// makeRun starts the page's make run command in the repository, waits for
// it to be up and returns what it printed until then; it stops it, as
// Ctrl-C would, when the test ends.
func (s *session) makeRun(t *testing.T, command string) []string {
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir, cmd.Env = s.root, s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.CloseWithError(io.EOF); done <- err }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var buf bytes.Buffer
	timeout := time.After(20 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("$ %s\nended before it was up:\n%s", command, buf.String())
			}
			buf.WriteString(l + "\n")
			if l == upMarker {
				go func() { // what it prints later (the stop) is not the page's
					for range lines {
					}
				}()
				return s.paths.Display(buf.String())
			}
		case <-timeout:
			t.Fatalf("$ %s\nnot up after 20 minutes:\n%s", command, buf.String())
		}
	}
}

// run runs one command as the reader's shell would; it returns its output
// (stdout and stderr as a terminal interleaves them) and exit code.
func (s *session) run(t *testing.T, command string) ([]string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir, cmd.Env = s.dir, s.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("$ %s: %v", command, err)
	}
	return s.paths.Display(out.String()), code
}

// runUntil runs command once, or, within limit, again until ok says its
// output and exit code are the ones expected.
func (s *session) runUntil(t *testing.T, command string, limit time.Duration, ok func([]string, int) bool) ([]string, int) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		out, code := s.run(t, command)
		if ok(out, code) || time.Now().After(deadline) {
			return out, code
		}
		time.Sleep(time.Second)
	}
}

// readmeTour runs every command of the README's "A short tour" block: each
// must succeed on make run's environment.
func (s *session) readmeTour(t *testing.T, root string) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## A short tour\n")
	if !ok {
		t.Fatal("README.md has no section \"A short tour\"")
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatal("README.md's short tour has no sh block")
	}
	block, _, _ := strings.Cut(rest, "```")
	n := 0
	for _, command := range strings.Split(strings.TrimSpace(block), "\n") {
		if command = strings.TrimSpace(command); command == "" || strings.HasPrefix(command, "#") {
			continue
		}
		n++
		// Read-only: the state may not have settled yet.
		out, code := s.runUntil(t, command, settle, func(_ []string, code int) bool { return code == 0 })
		if code != 0 {
			t.Errorf("README tour: $ %s\nexited %d:\n%s", command, code, strings.Join(out, "\n"))
		}
	}
	if n < 5 {
		t.Fatalf("README.md's short tour has %d commands: the test no longer reads it", n)
	}
}
