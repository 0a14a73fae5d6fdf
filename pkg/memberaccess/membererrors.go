package memberaccess

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Errors from member clusters reach what users see: the mesh's status,
// its plan, events. A member API server is the tenant's, or anybody's the
// tenant names, so what it answers is never quoted there: a response body
// could carry anything (another system's data fetched through this server,
// text made to mislead an administrator, megabytes). Only what this server
// observed itself is told: the HTTP status code, a reason Kubernetes
// defines, and transport failures, each cut to MaxErrorText bytes.

// MaxErrorText bounds the text of one member cluster error.
const MaxErrorText = 300

// knownReasons are the StatusReasons Kubernetes defines; a reason outside
// them is the member's own text and is left out.
var knownReasons = map[metav1.StatusReason]bool{
	metav1.StatusReasonUnauthorized: true, metav1.StatusReasonForbidden: true, metav1.StatusReasonNotFound: true,
	metav1.StatusReasonAlreadyExists: true, metav1.StatusReasonConflict: true, metav1.StatusReasonGone: true,
	metav1.StatusReasonInvalid: true, metav1.StatusReasonServerTimeout: true, metav1.StatusReasonStoreReadError: true,
	metav1.StatusReasonTimeout: true, metav1.StatusReasonTooManyRequests: true, metav1.StatusReasonBadRequest: true,
	metav1.StatusReasonMethodNotAllowed: true, metav1.StatusReasonNotAcceptable: true,
	metav1.StatusReasonRequestEntityTooLarge: true, metav1.StatusReasonUnsupportedMediaType: true,
	metav1.StatusReasonInternalError: true, metav1.StatusReasonExpired: true,
	metav1.StatusReasonServiceUnavailable: true,
}

// ErrorText describes an error of a request to a member cluster
// without anything of the answer's body.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return statusText(status.Status())
	}
	var pe *Error
	if errors.As(err, &pe) {
		return capText(pe.Message)
	}
	return capText(err.Error())
}

func statusText(s metav1.Status) string {
	code := int(s.Code)
	if code >= 300 && code < 400 {
		return Redirected(code).Message
	}
	text := fmt.Sprintf("the API server answered HTTP %d", code)
	if t := http.StatusText(code); t != "" {
		text += " " + t
	}
	if knownReasons[s.Reason] && string(s.Reason) != strings.ReplaceAll(http.StatusText(code), " ", "") {
		text += " (" + string(s.Reason) + ")"
	}
	return text
}

// capText keeps the first MaxErrorText bytes of printable text.
func capText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
	if len(s) <= MaxErrorText {
		return s
	}
	cut := MaxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// memberError is an error of a member cluster request whose text is
// ErrorText; the original stays reachable for errors.Is (context
// errors, connection errors) but is never printed.
type memberError struct {
	text  string
	cause error
}

func (e *memberError) Error() string { return e.text }
func (e *memberError) Unwrap() error { return e.cause }

// Sanitize returns err with a text fit for users. An answer keeps its code
// and (known) reason, so that apierrors.IsNotFound and the like still work
// on it; its message and details, which the member wrote, are dropped.
func Sanitize(err error) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		reason := s.Reason
		if !knownReasons[reason] {
			reason = metav1.StatusReasonUnknown
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    s.Code,
			Reason:  reason,
			Message: statusText(s),
		}}
	}
	return &memberError{text: ErrorText(err), cause: err}
}

// RedirectCode is the HTTP status of an answer that was a redirect, or 0.
func RedirectCode(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := int(status.Status().Code); code >= 300 && code < 400 {
			return code
		}
	}
	return 0
}

// SanitizeEvent replaces the text of an error the API server sent in a
// watch with what this server observed (its code and known reason): the
// reflector logs it.
func SanitizeEvent(e watch.Event) watch.Event {
	s, ok := e.Object.(*metav1.Status)
	if !ok {
		return e
	}
	clean := *s
	clean.Message, clean.Details = statusText(*s), nil
	if !knownReasons[clean.Reason] {
		clean.Reason = metav1.StatusReasonUnknown
	}
	e.Object = &clean
	return e
}
