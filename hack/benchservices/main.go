// Command benchservices measures multi-cluster services through the real
// server binary on real kube-apiservers: a mesh of 3 member clusters (a
// fourth runs the server), N Services of 10 endpoints exported from the
// first member; the time until the imports exist everywhere, the time a
// single endpoint change takes to reach both importing clusters'
// EndpointSlices (watch-based), the writes in steady state and the
// server's memory without and with services. hack/bench-services.sh runs
// it; the figures go to docs/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/internal/benchenv"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

const (
	meshNamespace = "bench"
	meshName      = "bench"
	// exporter is the member cluster every Service is exported from; the
	// other members import them.
	exporter = 1
)

type config struct {
	services, endpoints, namespaces, changes int
	spacing, steady, settle                  time.Duration
}

func main() {
	var c config
	flag.IntVar(&c.services, "services", 500, "exported Services in the first member cluster")
	flag.IntVar(&c.endpoints, "endpoints", 10, "ready endpoints per exported Service")
	flag.IntVar(&c.namespaces, "namespaces", 10, "namespaces the Services are spread over (in every member)")
	flag.IntVar(&c.changes, "changes", 200, "single endpoint changes timed one after the other")
	flag.DurationVar(&c.spacing, "spacing", 250*time.Millisecond, "pause between two timed changes")
	flag.DurationVar(&c.steady, "steady", time.Minute, "how long writes are counted in steady state")
	flag.DurationVar(&c.settle, "settle", 20*time.Second, "wait before a memory reading or the steady-state count")
	flag.Parse()
	benchenv.Run(time.Hour, func(ctx context.Context) error { return run(ctx, c) })
}

// bench holds the environment of a run; clusters 1 to 3 are the members.
type bench struct {
	config
	env    *framework.Env
	server *framework.MeshServer
	kube   map[int]kubernetes.Interface
	mcs    map[int]mcsclient.Interface
	uid    types.UID
	seen   *sightings
}

func members() []int { return []int{1, 2, 3} }

func run(ctx context.Context, c config) error {
	env, server, err := benchenv.Start(ctx, framework.Options{Clusters: 4}, framework.MeshServerOptions{})
	if err != nil {
		return err
	}
	defer env.Stop()
	b := &bench{config: c, env: env, server: server, kube: map[int]kubernetes.Interface{}, mcs: map[int]mcsclient.Interface{}}
	for i := range 4 {
		cfg := benchenv.AdminConfig(env, i)
		b.kube[i] = kubernetes.NewForConfigOrDie(cfg)
		b.mcs[i] = mcsclient.NewForConfigOrDie(cfg)
	}
	start := time.Now()
	if err := b.populate(ctx); err != nil {
		return err
	}
	log.Printf("created %d exported Services of %d endpoints in %s", c.services, c.endpoints, time.Since(start).Round(time.Second))
	if err := b.createMesh(ctx); err != nil {
		return err
	}
	time.Sleep(c.settle)
	without, err := b.memory(ctx)
	if err != nil {
		return err
	}
	log.Printf("without services: %s", without)
	start = time.Now()
	imported, err := b.enableServices(ctx)
	if err != nil {
		return err
	}
	log.Printf("every import exists after %s", imported.Round(time.Millisecond))
	if err := b.quiet(ctx); err != nil {
		return err
	}
	steady := time.Since(start)
	log.Printf("no services write for 5 s after %s", steady.Round(time.Second))
	p50, p99, worst, over, err := b.endpointChanges(ctx)
	if err != nil {
		return err
	}
	writes, err := b.steadyWrites(ctx)
	if err != nil {
		return err
	}
	with, err := b.memory(ctx)
	if err != nil {
		return err
	}

	fmt.Printf("\n3 member clusters, %d Services of %d endpoints exported from one, imported by the other two (%d namespaces)\n",
		c.services, c.endpoints, c.namespaces)
	fmt.Printf("| figure | value | goal |\n|---|---|---|\n")
	fmt.Printf("| services enabled -> every import's EndpointSlices on both importing clusters | %s | |\n", imported.Round(10*time.Millisecond))
	fmt.Printf("| services enabled -> no services write for 5 s (ServiceImports with IPs and status; in 5 s steps, the quiet 5 s included) | %s | |\n", steady.Round(time.Second))
	fmt.Printf("| single endpoint change -> both importing clusters' EndpointSlices, p50 (%d changes, %s apart) | %s | |\n",
		c.changes, c.spacing, p50.Round(time.Millisecond))
	fmt.Printf("| single endpoint change, p99 | %s | < 250 ms |\n", p99.Round(time.Millisecond))
	fmt.Printf("| single endpoint change, slowest | %s | |\n", worst.Round(time.Millisecond))
	fmt.Printf("| single endpoint changes taking 250 ms or more | %d of %d | |\n", over, c.changes)
	fmt.Printf("| services writes per minute in steady state (EndpointSlices, ServiceImports, Services, ServiceExports on the 3 members) | %.1f | 0 |\n", writes)
	fmt.Printf("| server memory without services: resident, Go heap in use | %s | |\n", without)
	fmt.Printf("| server memory with services: resident, Go heap in use | %s | |\n", with)
	fmt.Printf("| extra memory of services: resident, Go heap in use | %d MiB, %d MiB | |\n",
		(int64(with.rss)-int64(without.rss))>>20, (int64(with.heap)-int64(without.heap))>>20)
	fmt.Printf("| load average at the end | %s | |\n", benchenv.LoadAverage())
	return nil
}
