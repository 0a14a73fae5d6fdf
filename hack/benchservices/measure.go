package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/internal/benchenv"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// usage is the server's memory at one moment.
type usage struct{ rss, heap uint64 }

func (u usage) String() string {
	if u.heap == 0 {
		return fmt.Sprintf("%d MiB, heap unknown", u.rss>>20)
	}
	return fmt.Sprintf("%d MiB, %d MiB", u.rss>>20, u.heap>>20)
}

// memory reads the server's resident set and its Go heap in use.
func (b *bench) memory(ctx context.Context) (usage, error) {
	var u usage
	rss, _, err := benchenv.Memory(b.server.Pid())
	if err != nil {
		return u, fmt.Errorf("reading the server's memory: %w", err)
	}
	u.rss = rss
	m, err := framework.Scrape(ctx, b.server.DirectRESTConfig(framework.UserAdmin))
	if err != nil {
		return u, err
	}
	if heap, err := framework.MetricSum(m, "go_memstats_heap_inuse_bytes"); err != nil {
		log.Printf("the server's Go heap is not in its metrics: %v", err)
	} else {
		u.heap = uint64(heap)
	}
	return u, nil
}

// steadyResources are what the services reconciler writes on members.
var steadyResources = [][2]string{
	{"discovery.k8s.io", "endpointslices"},
	{"multicluster.x-k8s.io", "serviceimports"},
	{"multicluster.x-k8s.io", "serviceexports"},
	{"", "services"},
}

// servicesWrites is the services write requests the members served so far.
func (b *bench) servicesWrites(ctx context.Context) (float64, error) {
	var sum float64
	for _, i := range members() {
		m, err := framework.Scrape(ctx, b.env.RESTConfig(i, framework.UserAdmin))
		if err != nil {
			return 0, err
		}
		for _, r := range steadyResources {
			n, err := framework.RequestWrites(m, r[0], r[1])
			if err != nil {
				return 0, fmt.Errorf("cluster %d: %w", i, err)
			}
			sum += n
		}
	}
	return sum, nil
}

// quiet waits until the members served no services write for 5 s: the
// imports exist before their ServiceImports have the derived Services' IPs
// and statuses, and a change timed before those writes end waits for them.
func (b *bench) quiet(ctx context.Context) error {
	last, err := b.servicesWrites(ctx)
	if err != nil {
		return err
	}
	for start := time.Now(); time.Since(start) < 20*time.Minute; {
		time.Sleep(5 * time.Second)
		now, err := b.servicesWrites(ctx)
		if err != nil {
			return err
		}
		if now == last {
			return nil
		}
		last = now
	}
	return fmt.Errorf("the services writes did not stop within 20 minutes")
}

// steadyWrites counts the services writes the members serve per minute
// while nothing changes.
func (b *bench) steadyWrites(ctx context.Context) (float64, error) {
	time.Sleep(b.settle) // the last change's echoes
	before, err := b.servicesWrites(ctx)
	if err != nil {
		return 0, err
	}
	time.Sleep(b.steady)
	after, err := b.servicesWrites(ctx)
	if err != nil {
		return 0, err
	}
	return (after - before) / b.steady.Minutes(), nil
}
