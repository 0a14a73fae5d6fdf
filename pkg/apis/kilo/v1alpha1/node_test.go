package v1alpha1

import (
	"errors"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckedIn(t *testing.T) {
	now := time.Unix(1_000_000, 400_000_000)
	seen := func(s string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationLastSeen: s}}}
	}
	ago := func(sec int64) *corev1.Node { return seen(strconv.FormatInt(now.Unix()-sec, 10)) }
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		want    bool
		wantErr error // of LastSeen; nil means it parses
	}{
		{name: "just now", node: ago(0), want: true},
		{name: "59 s ago", node: ago(59), want: true},
		// kg compares whole seconds: 60 s of silence is one too many.
		{name: "60 s ago", node: ago(60), want: false},
		{name: "an hour ago", node: ago(3600), want: false},
		{name: "in the future", node: ago(-5), want: true},
		{name: "no annotation", node: &corev1.Node{}, want: false, wantErr: ErrNeverCheckedIn},
		{name: "empty", node: seen(""), want: false, wantErr: ErrNeverCheckedIn},
		{name: "not a number", node: seen("yesterday"), want: false, wantErr: errors.New("malformed")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CheckedIn(tc.node, now); got != tc.want {
				t.Errorf("CheckedIn = %v, want %v", got, tc.want)
			}
			at, err := LastSeen(tc.node)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("LastSeen: %v", err)
			case tc.wantErr == ErrNeverCheckedIn && !errors.Is(err, ErrNeverCheckedIn):
				t.Fatalf("LastSeen error = %v, want ErrNeverCheckedIn", err)
			case tc.wantErr != nil && err == nil:
				t.Fatalf("LastSeen = %v, want an error", at)
			}
			if err != nil {
				return
			}
			expires, err := CheckInExpires(tc.node)
			if err != nil || !expires.Equal(at.Add(CheckInWindow)) {
				t.Errorf("CheckInExpires = %v, %v; want %v", expires, err, at.Add(CheckInWindow))
			}
		})
	}
}
