package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one child process (etcd, kube-apiserver, kilo-mesh-apiserver)
// run in its own process group, with stdout and stderr appended to a log file.
type process struct {
	name    string
	path    string
	args    []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current cmd has exited
	err  error         // exit status of the current cmd, valid after done
}

func newProcess(name, path, logPath string, args []string) *process {
	return &process{name: name, path: path, args: args, logPath: logPath}
}

// start starts the process. Its log file is appended to, so a restarted
// process keeps the earlier output.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		return fmt.Errorf("%s is already running (pid %d)", p.name, p.cmd.Process.Pid)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "=== %s: starting %s %s\n", time.Now().Format(time.RFC3339Nano), p.path, strings.Join(p.args, " "))
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: the terminal's Ctrl-C reaches only our process,
		// which then stops children in order; and stop() can kill the group.
		Setpgid: true,
		// If the test binary dies without cleanup (go test -timeout,
		// SIGKILL), the kernel kills the child too.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func isClosed(ch chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// running reports whether the process has been started and has not exited.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !isClosed(p.done)
}

// exited returns a channel closed when the current run exits (nil if never
// started) and a function returning its exit error.
func (p *process) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// stop sends SIGTERM to the process group, waits up to grace, then sends
// SIGKILL. A grace of 0 kills at once. Stopping a stopped process is a no-op.
func (p *process) stop(grace time.Duration) error {
	if grace > 0 && p.signalAndWait(syscall.SIGTERM, grace) {
		return nil
	}
	if p.signalAndWait(syscall.SIGKILL, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid())
}

// stopWithin stops a server that must exit by itself on SIGTERM: if it has
// not exited within bound, it gets SIGQUIT (a Go program then writes every
// goroutine to its log and exits), then SIGKILL, and the stop fails with what
// held it, so that no hang passes as a slow stop.
func (p *process) stopWithin(bound time.Duration) error {
	pid, start := p.pid(), time.Now()
	if p.signalAndWait(syscall.SIGTERM, bound) {
		return nil
	}
	logSize := fileSize(p.logPath)
	p.signalAndWait(syscall.SIGQUIT, goroutineDumpWait)
	if err := p.stop(0); err != nil {
		return err
	}
	return fmt.Errorf("%s (pid %d) did not exit within %s of SIGTERM (killed after %s); what held it, from its goroutine dump in %s:\n%s",
		p.name, pid, bound, time.Since(start).Round(time.Second), p.logPath, heldBy(p.logPath, logSize))
}

// signalAndWait sends sig to the process group of the current run and waits
// up to d for it to exit; true when no run is left.
func (p *process) signalAndWait(sig syscall.Signal, d time.Duration) bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || isClosed(done) {
		return true
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// goroutineDumpWait bounds the wait for a process to write its goroutines
// after SIGQUIT.
const goroutineDumpWait = 10 * time.Second

// pid returns the pid of the current run, or 0.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// exitError describes an early exit of the process, with the end of its log.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited: %v; last lines of %s:\n%s", p.name, p.exitErr(), p.logPath, tailFile(p.logPath, 40))
}

// waitFor polls check every interval until it returns nil, the process exits
// (error with its log tail), or ctx ends (error with the last check error).
func (p *process) waitFor(ctx context.Context, what string, interval time.Duration, check func(context.Context) error) error {
	exited := p.exited()
	var last error
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(attemptCtx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s of %s: %w (last error: %v); log: %s", what, p.name, ctx.Err(), last, p.logPath)
		case <-time.After(interval):
		}
	}
}

// tailFile returns the last n lines of a file, or a note why it cannot.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	const maxBytes = 64 << 10
	if len(data) > maxBytes {
		data = data[len(data)-maxBytes:]
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// runCommand runs a short-lived command and returns stdout and stderr.
func runCommand(ctx context.Context, stdin io.Reader, env []string, path string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, stdin
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			err = fmt.Errorf("%s %s: %w: %s", path, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		} else {
			err = fmt.Errorf("%s %s: %w", path, strings.Join(args, " "), err)
		}
	}
	return stdout.String(), stderr.String(), err
}
