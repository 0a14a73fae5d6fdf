package cli

import (
	"errors"
	"fmt"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Exit codes of the plugin. Scripts match on them; they never change.
const (
	// ExitOK: the command did what was asked (status: the mesh is Ready).
	ExitOK = 0
	// ExitError: the command failed; the message says why.
	ExitError = 1
	// ExitNotReady: status --wait timed out before the mesh was Ready, or
	// status found it not Ready.
	ExitNotReady = 2
)

// exitError is an error with an exit code of its own.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// WithExitCode makes err end the plugin with code.
func WithExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// ExitCode is the exit code err asks for.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitError
}

// Main runs a command's error through the exit codes: it prints err and
// exits. Kept here so that cmd/kubectl-mesh only wires.
func Main(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(ExitCode(err))
}

// Explain wraps an error of the host's API about what, adding what a user
// can do about a missing object.
func Explain(err error, what string) error {
	if err == nil {
		return nil
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s not found (is the namespace right? use -n): %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
