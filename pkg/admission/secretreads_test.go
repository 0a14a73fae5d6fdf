package admission

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestSecretReadsAdmit(t *testing.T) {
	r := newSecretReads()
	for _, tc := range []struct {
		name      string
		namespace string
		n         int
		want429   bool
	}{
		{name: "the Secrets of the largest mesh at once", namespace: "attacker", n: secretReadBurst},
		{name: "again at once: over the namespace's budget", namespace: "attacker", n: secretReadBurst, want429: true},
		{name: "one more at once: still over", namespace: "attacker", n: secretReadsPerSecond + 1, want429: true},
		{name: "another namespace is not affected", namespace: "innocent", n: secretReadBurst},
		{name: "more than any mesh names", namespace: "other", n: secretReadBurst + 1, want429: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.admit(tc.namespace, tc.n)
			if got := apierrors.IsTooManyRequests(err); got != tc.want429 {
				t.Fatalf("admit(%q, %d) = %v, want a 429: %v", tc.namespace, tc.n, err, tc.want429)
			}
			if err == nil {
				return
			}
			if s, ok := apierrors.SuggestsClientDelay(err); !ok || s < 1 {
				t.Errorf("no Retry-After in %v", err)
			}
		})
	}
}
