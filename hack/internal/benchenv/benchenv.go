// Package benchenv holds what the benchmarks under hack/ share: running one,
// the real clusters and server binary they measure, clients of those, and
// the readings of the machine printed beside their figures.
package benchenv

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Run runs a benchmark within timeout and ends the process with its error.
// An interrupt or a termination ends it too, once the benchmark has
// stopped what it started (its clusters, server and hollow members).
func Run(timeout time.Duration, run func(context.Context) error) {
	log.SetFlags(log.Ltime)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

// Start starts the clusters and the real server binary; the caller stops
// the environment, which stops the server with it.
func Start(ctx context.Context, clusters framework.Options, server framework.MeshServerOptions) (*framework.Env, *framework.MeshServer, error) {
	env, err := framework.Start(ctx, clusters)
	if err != nil {
		return nil, nil, err
	}
	s, err := env.StartMeshServer(ctx, server)
	if err != nil {
		env.Stop()
		return nil, nil, err
	}
	return env, s, nil
}

// AdminConfig is the admin's client configuration of cluster i, with
// limits high enough that the client never throttles the benchmark.
func AdminConfig(env *framework.Env, i int) *rest.Config {
	cfg := rest.CopyConfig(env.RESTConfig(i, framework.UserAdmin))
	cfg.QPS, cfg.Burst = 2000, 4000
	return cfg
}

// Memory reads the resident set of process pid and its peak, in bytes.
func Memory(pid int) (rss, peak uint64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	defer f.Close()
	found := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			rss, found = kb<<10, true
		case "VmHWM:":
			peak = kb << 10
		}
	}
	if err := s.Err(); err != nil {
		return 0, 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	if !found {
		return 0, 0, fmt.Errorf("process %d states no resident set (VmRSS)", pid)
	}
	return rss, peak, nil
}

// LoadAverage is the machine's load average over 1, 5 and 15 minutes.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
