package memberaccess

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestSanitize: what a member answers never reaches users, and what the
// reconciler decides on (code, reason, context errors) survives.
func TestSanitize(t *testing.T) {
	const body = "SECRET-BODY aws_secret_access_key=abc"
	peers := schema.GroupResource{Group: "kilo.squat.ai", Resource: "peers"}
	for _, tc := range []struct {
		name  string
		in    error
		check func(error) bool
		want  string
	}{
		{"not found keeps its reason", apierrors.NewNotFound(peers, body), apierrors.IsNotFound, "HTTP 404 Not Found"},
		{"conflict keeps its reason", apierrors.NewConflict(peers, "p", errors.New(body)), apierrors.IsConflict, "HTTP 409 Conflict"},
		{"a 500 with a text body", apierrors.NewGenericServerResponse(500, "GET", peers, "p", body, 0, true), apierrors.IsInternalError, "HTTP 500 Internal Server Error"},
		{"an invented reason is dropped", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 418, Reason: metav1.StatusReason(body), Message: body}},
			func(err error) bool { return apierrors.ReasonForError(err) == metav1.StatusReasonUnknown }, "HTTP 418"},
		{"a redirect", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 302, Message: body}}, func(error) bool { return true }, "redirects are never followed"},
		{"context errors stay recognisable", fmt.Errorf("Get %q: %w", "https://m:443/x", context.DeadlineExceeded),
			func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, "context deadline exceeded"},
		{"long transport errors are cut", errors.New(strings.Repeat("x", 5000)), func(error) bool { return true }, "..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Sanitize(tc.in)
			if strings.Contains(got.Error(), "SECRET-BODY") {
				t.Errorf("the body reached the text: %q", got.Error())
			}
			if len(got.Error()) > MaxErrorText+3 {
				t.Errorf("text of %d bytes", len(got.Error()))
			}
			if !tc.check(got) {
				t.Errorf("the error lost what callers decide on: %#v", got)
			}
			if !strings.Contains(got.Error(), tc.want) {
				t.Errorf("text %q, want it to contain %q", got.Error(), tc.want)
			}
		})
	}
}
