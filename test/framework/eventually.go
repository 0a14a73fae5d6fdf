package framework

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// EventuallyT polls f until it returns nil and returns how long that took;
// when timeout passes first, it fails the test with what and f's last
// error. It polls every 10 ms at first, so that the time a quick change
// took is measured closely, and backs off to every 200 ms, so that a slow
// condition reading several API servers does not load them.
func EventuallyT(t testing.TB, timeout time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	if err := backoff(context.Background(), 10*time.Millisecond, 200*time.Millisecond, timeout,
		func(context.Context) error { return f() }); err != nil {
		t.Fatalf("%s: not within %s: %v", what, timeout, err)
	}
	return time.Since(start)
}

// Eventually calls f every interval until it returns nil, ctx ends or
// timeout passes; the error then carries f's last error. For conditions
// that settle asynchronously (reconciliation, RBAC caches: delegated
// authorization caches answers for 10 s).
func Eventually(ctx context.Context, interval, timeout time.Duration, f func(context.Context) error) error {
	return poll(ctx, interval, timeout, f)
}

// poll calls f every interval until it returns nil, ctx ends or timeout
// passes; the error then carries f's last error.
func poll(ctx context.Context, interval, timeout time.Duration, f func(context.Context) error) error {
	return backoff(ctx, interval, interval, timeout, f)
}

// backoff calls f until it returns nil, ctx ends or timeout passes, waiting
// first, then twice as long each time up to most; the error then carries
// f's last error.
func backoff(ctx context.Context, first, most, timeout time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wait := first
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, most)
	}
}
