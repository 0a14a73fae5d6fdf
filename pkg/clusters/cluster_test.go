package clusters

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// TestClusterRateLimits: a cluster's Peer writes have a rate limiter of
// their own, at the configured rate, and the caches' lists and watches
// another, at that rate capped at CacheQPS: a change's write never waits
// for tokens the caches took, whatever they took.
func TestClusterRateLimits(t *testing.T) {
	for _, c := range []struct {
		name                 string
		qps                  float32
		burst                int
		wantWrite, wantCache float32
	}{
		{"defaults", DefaultQPS, DefaultBurst, DefaultQPS, CacheQPS},
		{"below the caches' cap", 20, 30, 20, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := &rest.Config{Host: "https://127.0.0.1:1", QPS: c.qps, Burst: c.burst}
			cl, err := newCluster(localID, cfg, clusterOptions{clock: clock.RealClock{}, onChange: func(*cluster) {}}, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := cl.writeLimiter.QPS(); got != c.wantWrite {
				t.Errorf("Peer writes at %v per second, want %v", got, c.wantWrite)
			}
			if got := cl.cacheLimiter.QPS(); got != c.wantCache {
				t.Errorf("the caches at %v per second, want %v", got, c.wantCache)
			}
			for cl.cacheLimiter.TryAccept() {
			}
			if !cl.writeLimiter.TryAccept() {
				t.Errorf("a Peer write waits once the caches used their tokens")
			}
		})
	}
}

// BenchmarkNewCluster: what one member connection's clients and caches
// take before they hold anything; a server holds hundreds (a connection
// per tenant's entry).
func BenchmarkNewCluster(b *testing.B) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "t", QPS: 200, Burst: 400}
	opts := clusterOptions{probeInterval: time.Second, probeTimeout: time.Second, clock: clock.RealClock{}, onChange: func(*cluster) {}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newCluster("bench", cfg, opts, false, nil); err != nil {
			b.Fatal(err)
		}
	}
}
