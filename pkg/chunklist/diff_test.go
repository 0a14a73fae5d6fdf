package chunklist

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

type item struct {
	name    string
	version int
}

func (i *item) GetName() string { return i.name }

// change is what Diff yields, by name: the versions it saw, -1 for none.
type change struct {
	name     string
	old, new int
}

func changesOf(old, cur List[*item]) ([]change, bool) {
	var out []change
	ok := Diff(old, cur, ByName[*item], func(o, n *item) bool {
		c := change{old: -1, new: -1}
		if o != nil {
			c.name, c.old = o.name, o.version
		}
		if n != nil {
			c.name, c.new = n.name, n.version
		}
		out = append(out, c)
		return true
	})
	return out, ok
}

// TestDiff changes a list at random, a few changes at a time, and checks
// that Diff yields exactly what a comparison of every name finds, while
// reading the names of few more elements than the changed chunks hold.
func TestDiff(t *testing.T) {
	for _, tc := range []struct{ size, changes int }{{0, 1}, {1, 1}, {300, 3}, {5000, 1}, {5000, 20}, {70000, 5}} {
		t.Run(fmt.Sprintf("%d-%d", tc.size, tc.changes), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(tc.size + tc.changes)))
			byName := map[string]*item{}
			for len(byName) < tc.size {
				n := fmt.Sprintf("node-%06d", r.Intn(4*tc.size))
				byName[n] = &item{name: n}
			}
			l := Sorted(mapValues(byName), ByName[*item])
			for step := 0; step < 40; step++ {
				next, want := l, map[string]change{}
				for k := 0; k < tc.changes; k++ {
					n := fmt.Sprintf("node-%06d", r.Intn(4*tc.size+2))
					was, held := byName[n]
					c := want[n]
					if _, seen := want[n]; !seen {
						c = change{name: n, old: -1, new: -1}
						if held {
							c.old = was.version
						}
					}
					if held && r.Intn(3) == 0 {
						next, _ = next.Without(n, ByName[*item])
						delete(byName, n)
						c.new = -1
					} else {
						v := &item{name: n, version: step*100 + k + 1}
						next = next.With(v, ByName[*item])
						byName[n] = v
						c.new = v.version
					}
					want[n] = c
				}
				var reads int
				counting := func(v *item) string { reads++; return v.name }
				Diff(l, next, counting, func(o, n *item) bool { return true })
				got, ok := changesOf(l, next)
				if !ok {
					t.Fatalf("step %d: Diff gave up on two sorted lists", step)
				}
				var wanted []change
				for _, c := range want {
					if c.old != c.new {
						wanted = append(wanted, c)
					}
				}
				slices.SortFunc(wanted, func(a, b change) int { return strings.Compare(a.name, b.name) })
				if !slices.Equal(got, wanted) {
					t.Fatalf("step %d: Diff yields %v, want %v", step, got, wanted)
				}
				if limit := 2*tc.changes*(3*ChunkMean+groupMean) + 8*len(next.groups); reads > limit {
					t.Fatalf("step %d: Diff read %d names after %d changes, more than %d: it did not skip what the versions share", step, reads, tc.changes, limit)
				}
				l = next
			}
		})
	}
}

func mapValues(m map[string]*item) []*item {
	out := make([]*item, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestDiffRefuses: a list that holds a name twice cannot be compared by
// name, and a yield that stops stops Diff.
func TestDiffRefuses(t *testing.T) {
	a, a2, b := &item{name: "a"}, &item{name: "a", version: 1}, &item{name: "b"}
	for _, tc := range []struct {
		name     string
		old, cur List[*item]
		stop     bool
	}{
		{"a name twice in the new version", Sorted([]*item{b}, ByName[*item]), Sorted([]*item{a, a2, b}, ByName[*item]), false},
		{"a name twice in the old version", Sorted([]*item{a, a2}, ByName[*item]), Sorted([]*item{b}, ByName[*item]), false},
		{"yield stops", Sorted([]*item{a}, ByName[*item]), Sorted([]*item{b}, ByName[*item]), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if Diff(tc.old, tc.cur, ByName[*item], func(o, n *item) bool { return !tc.stop }) {
				t.Fatal("Diff returned true")
			}
		})
	}
	if !Diff(Sorted([]*item{a, nil}, ByName[*item]), Sorted([]*item{nil, a}, ByName[*item]), ByName[*item], func(o, n *item) bool { return false }) {
		t.Fatal("two versions holding the same element differ, or Sorted kept a nil")
	}
}
