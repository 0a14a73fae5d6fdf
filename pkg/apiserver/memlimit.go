package apiserver

import (
	"fmt"
	"os"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// goMemoryShare is the share of --memory-limit Go's collector keeps the
// runtime's memory under. The rest is for what the runtime does not count
// (the binary's pages) and for the collector to catch up: reading a
// member's list page near its 64 MiB cap makes garbage of several times that
// in a moment, which Go would otherwise let grow to twice what is live.
const goMemoryShare = 0.9

// goMemoryLimit is the soft memory limit the server gives Go for the
// container limit memoryLimit (a quantity, such as 512Mi or the bytes the
// kubelet passes for limits.memory): 0 for none, and none when GOMEMLIMIT
// (gomemlimit) is set, which Go applies itself.
func goMemoryLimit(memoryLimit, gomemlimit string) (int64, error) {
	if memoryLimit == "" || gomemlimit != "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(memoryLimit)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit=%q: %w", memoryLimit, err)
	}
	if q.Sign() <= 0 {
		return 0, fmt.Errorf("--memory-limit=%q must be positive", memoryLimit)
	}
	return int64(float64(q.Value()) * goMemoryShare), nil
}

// applyMemoryLimit sets Go's soft memory limit from --memory-limit.
func applyMemoryLimit(memoryLimit string) error {
	limit, err := goMemoryLimit(memoryLimit, os.Getenv("GOMEMLIMIT"))
	if err != nil || limit == 0 {
		return err
	}
	debug.SetMemoryLimit(limit)
	klog.InfoS("Go's memory limit set from --memory-limit", "memoryLimit", memoryLimit, "goMemoryLimitMiB", limit>>20)
	return nil
}
