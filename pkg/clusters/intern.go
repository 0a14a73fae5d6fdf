package clusters

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// internFor is how long a value nothing looked up stays interned: values
// are kept in two generations, so one no cached object holds any more is
// forgotten after one to two of these.
const internFor = 10 * time.Minute

// interner shares the lists and maps that many cached objects hold alike.
// A mesh of N clusters puts each group's Peer on the N-1 others, with the
// same allowed IPs, labels and annotations on each, and every member's
// cache holds its copy: at 250 clusters x 100 nodes those copies were
// most of the server's memory (62,250 Peers of about 5 KB). Cached objects
// are read-only, so one copy serves them all.
type interner struct {
	clock clock.PassiveClock

	mu        sync.Mutex
	cur, prev map[string]any
	rotated   time.Time
}

func newInterner(c clock.PassiveClock) *interner {
	return &interner{clock: c, cur: map[string]any{}, rotated: c.Now()}
}

// list returns a list equal to l that other objects may share, and
// whether another already holds it.
func (in *interner) list(l []string) ([]string, bool) {
	if in == nil || len(l) == 0 {
		return l, false
	}
	key := "l\x00" + strings.Join(l, "\x00")
	if v, ok := in.get(key).([]string); ok {
		return v, true
	}
	in.put(key, l)
	return l, false
}

// labels returns a map equal to m that other objects may share, and
// whether another already holds it.
func (in *interner) labels(m map[string]string) (map[string]string, bool) {
	if in == nil || len(m) == 0 {
		return m, false
	}
	var b strings.Builder
	b.WriteString("m\x00")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	key := b.String()
	if v, ok := in.get(key).(map[string]string); ok {
		return v, true
	}
	in.put(key, m)
	return m, false
}

// weighed is the weight of a list or map the cache holds: a reference
// only when another cached object holds it already, as its memory is
// there once.
func weighed(shared bool, w int64) int64 {
	if shared {
		return entryOverhead
	}
	return w
}

func (in *interner) get(key string) any {
	in.mu.Lock()
	defer in.mu.Unlock()
	if now := in.clock.Now(); now.Sub(in.rotated) > internFor {
		in.prev, in.cur, in.rotated = in.cur, map[string]any{}, now
	}
	if v, ok := in.cur[key]; ok {
		return v
	}
	if v, ok := in.prev[key]; ok {
		in.cur[key] = v
		return v
	}
	return nil
}

func (in *interner) put(key string, v any) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.cur[key] = v
}
