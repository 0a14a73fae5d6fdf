package chunklist

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

// TestListChanges adds and removes names at random and checks after each
// change that the list holds the names in order, in the chunks and groups
// a list built from them at once has (what keeps patched plans DeepEqual
// to whole ones).
func TestListChanges(t *testing.T) {
	for _, tc := range []struct{ size, steps, groups int }{{0, 2000, 0}, {1, 2000, 1}, {300, 2000, 1}, {3000, 2000, 1}, {60000, 300, 2}} {
		size := tc.size
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(size)))
			var want []string
			for i := 0; i < size; i++ {
				want = append(want, fmt.Sprintf("peer-%05d", r.Intn(4*size+1)))
			}
			slices.Sort(want)
			want = slices.Compact(want)
			l := Of(slices.Clone(want), self)
			if len(l.groups) < tc.groups {
				t.Fatalf("%d groups, want %d or more: the test would not change a group", len(l.groups), tc.groups)
			}
			var ends []string // names that ended a chunk or a group, taken out
			for step := 0; step < tc.steps; step++ {
				name, remove := fmt.Sprintf("peer-%05d", r.Intn(4*size+2)), r.Intn(2) == 0
				switch kind := r.Intn(4); {
				case kind == 1 && len(l.groups) > 0: // the end of a chunk: the next one joins it
					g := l.groups[r.Intn(len(l.groups))]
					c := g[r.Intn(len(g))]
					name, remove = c[len(c)-1], true
				case kind == 2 && len(l.groups) > 0: // the end of a group: the next one joins it
					name, remove = lastKey(l.groups[r.Intn(len(l.groups))], self), true
				case kind == 3 && len(ends) > 0: // an end back: its chunk, or group, splits
					name, remove, ends = ends[len(ends)-1], false, ends[:len(ends)-1]
				}
				k, held := slices.BinarySearch(want, name)
				if _, ok := l.Get(name, self); ok != held {
					t.Fatalf("step %d: get(%s) %v, want %v", step, name, ok, held)
				}
				if hashOf(name)%ChunkMean == 0 && remove {
					ends = append(ends, name)
				}
				if remove {
					var removed bool
					l, removed = l.Without(name, self)
					if removed != held {
						t.Fatalf("step %d: without(%s) removed %v, want %v", step, name, removed, held)
					}
					if held {
						want = slices.Delete(want, k, k+1)
					}
				} else {
					l = l.With(name, self)
					if !held {
						want = slices.Insert(want, k, name)
					}
				}
				if got := l.Slice(); !slices.Equal(got, want) || l.Len() != len(want) {
					t.Fatalf("step %d: list %d long, want %d; or elements differ", step, l.Len(), len(want))
				}
				if whole := Of(slices.Clone(want), self); !reflect.DeepEqual(l, whole) {
					t.Fatalf("step %d (%s, remove %v): %d groups, a list built at once %d, or their chunks differ\n%v\n%v", step, name, remove, len(l.groups), len(whole.groups), lens(l), lens(whole))
				}
			}
		})
	}
}

func lens(l List[string]) [][]int {
	var out [][]int
	for _, g := range l.groups {
		var c []int
		for _, chunk := range g {
			c = append(c, len(chunk))
		}
		out = append(out, c)
	}
	return out
}

// TestListAfterEnd adds a name after a last name that ends a chunk, or a
// group: the new name starts a chunk, or a group, of its own.
func TestListAfterEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  uint64
	}{{"chunk", ChunkMean}, {"group", ChunkMean * groupMean}} {
		t.Run(tc.name, func(t *testing.T) {
			end := ""
			for k := 0; end == ""; k++ {
				if n := fmt.Sprintf("peer-%07d", k); hashOf(n)%tc.mod == 0 {
					end = n
				}
			}
			names := []string{"peer-", end}
			l := Of(slices.Clone(names), self).With(end+"x", self)
			if whole := Of(append(names, end+"x"), self); !reflect.DeepEqual(l, whole) {
				t.Fatalf("%v, a list built at once %v", lens(l), lens(whole))
			}
			if len(l.groups[len(l.groups)-1][len(l.groups[len(l.groups)-1])-1]) != 1 {
				t.Fatalf("%v: %s is not in a chunk of its own", lens(l), end+"x")
			}
		})
	}
}

func self(s string) string { return s }

// TestReplace: replacing many elements at once gives the list that
// replacing them one by one gives, leaves the old list as it was, and
// returns the names it does not hold apart.
func TestReplace(t *testing.T) {
	for _, size := range []int{0, 10, 3000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(size)))
			var names []string
			for i := 0; i < size; i++ {
				names = append(names, fmt.Sprintf("node-%05d", i))
			}
			old := Sorted(itemsOf(names), ByName[*item])
			kept := old.Slice()
			var vs []*item
			for k := 0; k < 40; k++ {
				vs = append(vs, &item{name: fmt.Sprintf("node-%05d", r.Intn(size+5)), version: k + 1})
			}
			got, rest := old.Replace(vs, ByName[*item])
			want, wantRest := old, []*item(nil)
			for _, v := range vs {
				if _, ok := want.Get(v.name, ByName[*item]); !ok {
					wantRest = append(wantRest, v)
					continue
				}
				want = want.With(v, ByName[*item])
			}
			if !reflect.DeepEqual(got, want) || !slices.Equal(rest, wantRest) {
				t.Fatalf("Replace differs from With one by one, or returns %d apart, want %d", len(rest), len(wantRest))
			}
			if !slices.Equal(old.Slice(), kept) {
				t.Fatal("the old list changed")
			}
		})
	}
}

func itemsOf(names []string) []*item {
	out := make([]*item, len(names))
	for i, n := range names {
		out[i] = &item{name: n}
	}
	return out
}
