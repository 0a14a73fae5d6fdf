package apiserver

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// TestLeaseConfig: the Lease's client has no client-side rate limiter,
// neither its own nor one the local configuration shares, so that a
// renewal never waits behind another request of the server.
func TestLeaseConfig(t *testing.T) {
	for _, c := range []struct {
		name  string
		local *rest.Config
	}{
		{"default QPS", &rest.Config{Host: "https://127.0.0.1:6443"}},
		{"low QPS", &rest.Config{Host: "https://127.0.0.1:6443", QPS: 1, Burst: 1}},
		{"a shared limiter", &rest.Config{Host: "https://127.0.0.1:6443", RateLimiter: flowcontrol.NewTokenBucketRateLimiter(1, 1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			other, err := kubernetes.NewForConfig(c.local)
			if err != nil {
				t.Fatal(err)
			}
			if other.CoordinationV1().RESTClient().GetRateLimiter() == nil {
				t.Fatalf("the local configuration has no rate limiter: the test shows nothing")
			}
			qps, limiter := c.local.QPS, c.local.RateLimiter
			lease, err := kubernetes.NewForConfig(leaseConfig(c.local))
			if err != nil {
				t.Fatal(err)
			}
			if l := lease.CoordinationV1().RESTClient().GetRateLimiter(); l != nil {
				t.Errorf("the Lease's client has a rate limiter (%T)", l)
			}
			if c.local.QPS != qps || c.local.RateLimiter != limiter {
				t.Errorf("leaseConfig changed the local configuration")
			}
		})
	}
}
