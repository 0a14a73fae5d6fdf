package clusters

import "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"

// A cluster's problem is a *memberaccess.Error, so that the caches, the
// kubeconfig checks and the transport give users one kind of reason.

func newError(reason memberaccess.Reason, field, message string) *memberaccess.Error {
	return &memberaccess.Error{Reason: reason, Field: field, Message: message}
}

// OverLimit reports whether a reason is one of the limits on what the
// caches hold: such a cluster's caches are a part of it, never used.
func OverLimit(r memberaccess.Reason) bool {
	return r == memberaccess.ErrTooManyNodes || r == memberaccess.ErrTooManyPeers ||
		r == memberaccess.ErrCacheBudgetExceeded || r == memberaccess.ErrNamespaceBudgetExceeded
}

func sameError(a, b *memberaccess.Error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func errorText(e *memberaccess.Error) string {
	if e == nil {
		return ""
	}
	return e.Error()
}
