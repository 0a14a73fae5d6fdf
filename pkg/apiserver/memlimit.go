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
	limit, err := parseMemoryLimit(memoryLimit)
	return int64(float64(limit) * goMemoryShare), err
}

// parseMemoryLimit reads --memory-limit: 0 when empty.
func parseMemoryLimit(memoryLimit string) (int64, error) {
	if memoryLimit == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(memoryLimit)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit=%q: %w", memoryLimit, err)
	}
	if q.Sign() <= 0 {
		return 0, fmt.Errorf("--memory-limit=%q must be positive", memoryLimit)
	}
	return q.Value(), nil
}

// Defaults of the budget of all tenants' member data. What the caches keep
// takes about 1.3 times its weight in heap, and a namespace within its fair
// share may take the server to twice the total (clusters.Config): a quarter
// of the container's limit keeps both, with the server's own 80-100 MiB and
// the garbage of reading, under the limit.
const (
	memberCacheShareOfLimit = 4
	// defaultMemberCacheTotalMiB applies without --memory-limit.
	defaultMemberCacheTotalMiB = 1024
	// namespacesPerTotal: one namespace gets half the total by default,
	// so that one tenant never holds all of it.
	namespacesPerTotal = 2
)

// memberCacheBudget is the budget of all tenants' member data and of one
// namespace's, in bytes: the flags' values in MiB where set (non-zero),
// else derived from --memory-limit.
func memberCacheBudget(memoryLimit string, totalMiB, namespaceMiB int) (total, namespace int64, err error) {
	limit, err := parseMemoryLimit(memoryLimit)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case totalMiB > 0:
		total = int64(totalMiB) << 20
	case limit > 0:
		total = limit / memberCacheShareOfLimit
	default:
		total = defaultMemberCacheTotalMiB << 20
	}
	namespace = total / namespacesPerTotal
	if namespaceMiB > 0 {
		namespace = int64(namespaceMiB) << 20
	}
	return total, namespace, nil
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
