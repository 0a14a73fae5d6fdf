package benchenv

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// CPUProfile writes the server's CPU profile over the next d to path, from
// its /debug/pprof (the generic server's --profiling, on by default); the
// returned function waits for it. It shows where a phase's time goes in the
// process, which the stage budget cannot split further.
func CPUProfile(ctx context.Context, cfg *rest.Config, d time.Duration, path string) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fetchProfile(ctx, cfg, d, path); err != nil {
			log.Printf("CPU profile not written: %v", err)
			return
		}
		log.Printf("CPU profile of the server over %s written to %s", d, path)
	}()
	return func() { <-done }
}

func fetchProfile(ctx context.Context, cfg *rest.Config, d time.Duration, path string) error {
	return writeProfile(ctx, cfg, d+time.Minute, "profile", map[string]string{"seconds": fmt.Sprint(int(d.Seconds()))}, path)
}

// HeapProfile writes the server's heap profile, after a garbage collection,
// to path: what holds the memory the figures report.
func HeapProfile(ctx context.Context, cfg *rest.Config, path string) error {
	return writeProfile(ctx, cfg, time.Minute, "heap", map[string]string{"gc": "1"}, path)
}

// Profile writes the server's /debug/pprof/PROFILE (goroutine, allocs,
// ...) with params to path.
func Profile(ctx context.Context, cfg *rest.Config, profile string, params map[string]string, path string) error {
	return writeProfile(ctx, cfg, time.Minute, profile, params, path)
}

func writeProfile(ctx context.Context, cfg *rest.Config, timeout time.Duration, profile string, params map[string]string, path string) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	req := client.Discovery().RESTClient().Get().AbsPath("/debug/pprof", profile)
	for k, v := range params {
		req = req.Param(k, v)
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("reading /debug/pprof/%s of %s: %w", profile, cfg.Host, err)
	}
	return os.WriteFile(path, raw, 0o644)
}
