package benchenv

import (
	"os"
	"strings"
	"testing"
)

// TestMemory: the resident set and peak of a live process, and an error
// for a process that is not there rather than a figure of 0.
func TestMemory(t *testing.T) {
	t.Run("this process", func(t *testing.T) {
		rss, peak, err := Memory(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if rss == 0 || peak < rss {
			t.Errorf("rss %d, peak %d: want a resident set and a peak at least as large", rss, peak)
		}
	})
	t.Run("no such process", func(t *testing.T) {
		// Above the kernel's largest pid (2^22).
		if rss, peak, err := Memory(1 << 30); err == nil || !strings.Contains(err.Error(), "process 1073741824") {
			t.Errorf("want an error naming the process, got rss %d, peak %d, err %v", rss, peak, err)
		}
	})
}

// TestLoadAverage: three figures from /proc/loadavg.
func TestLoadAverage(t *testing.T) {
	if got := strings.Fields(LoadAverage()); len(got) != 3 {
		t.Errorf("LoadAverage() = %q, want three figures", got)
	}
}
