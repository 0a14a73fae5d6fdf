package planner

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

// TestListChanges adds and removes names at random and checks after each
// change that the list holds the names in order, in the chunks a list
// built from them at once has (what keeps patched plans DeepEqual to whole ones).
func TestListChanges(t *testing.T) {
	for _, size := range []int{0, 1, 300, 3000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(size)))
			var want []string
			for i := 0; i < size; i++ {
				want = append(want, fmt.Sprintf("peer-%05d", r.Intn(4*size+1)))
			}
			slices.Sort(want)
			want = slices.Compact(want)
			l := listOf(slices.Clone(want), self)
			for step := 0; step < 2000; step++ {
				name := fmt.Sprintf("peer-%05d", r.Intn(4*size+2))
				k, held := slices.BinarySearch(want, name)
				if _, ok := l.get(name, self); ok != held {
					t.Fatalf("step %d: get(%s) %v, want %v", step, name, ok, held)
				}
				if r.Intn(2) == 0 {
					var removed bool
					l, removed = l.without(name, self)
					if removed != held {
						t.Fatalf("step %d: without(%s) removed %v, want %v", step, name, removed, held)
					}
					if held {
						want = slices.Delete(want, k, k+1)
					}
				} else {
					l = l.with(name, self)
					if !held {
						want = slices.Insert(want, k, name)
					}
				}
				if got := l.Slice(); !slices.Equal(got, want) || l.Len() != len(want) {
					t.Fatalf("step %d: list %d long, want %d; or elements differ", step, l.Len(), len(want))
				}
				if whole := listOf(slices.Clone(want), self); !reflect.DeepEqual(l, whole) {
					t.Fatalf("step %d: %d chunks, a list built at once %d", step, len(l.parts), len(whole.parts))
				}
			}
		})
	}
}
