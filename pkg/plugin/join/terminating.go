package join

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// terminationWait bounds how long join waits for an object of the member
// identity that is being deleted (a namespace that `leave` just deleted
// takes a few seconds to finish terminating) before it applies it anew.
var terminationWait = 2 * time.Minute

// terminationPoll is how often join looks whether that object is gone.
var terminationPoll = 250 * time.Millisecond

// awaitGone waits until the object name of res, which is being deleted,
// is gone: applying it meanwhile is refused (a terminating namespace takes
// no new content), so join would fail for a deletion a moment old.
func awaitGone(ctx context.Context, res dynamic.ResourceInterface, kind, name string) error {
	ctx, cancel := context.WithTimeout(ctx, terminationWait)
	defer cancel()
	for {
		_, err := res.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("reading %s %s on the member cluster: %w", kind, name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s on the member cluster is still being deleted after %s: wait until it is gone, then run join again", kind, name, terminationWait)
		case <-time.After(terminationPoll):
		}
	}
}
