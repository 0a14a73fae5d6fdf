// Package chunklist holds List, a read-only list sorted by name in chunks
// that successive versions share, so that changing one element of a list of
// thousands copies a few hundred pointers, and comparing two versions skips
// what they share. Member caches hand their Nodes and Peers to the planner
// in it, and plans hold their lists in it.
package chunklist

import (
	"encoding/json"
	"iter"
	"slices"
	"sort"
	"strings"
)

// List is a read-only list sorted by name, held in chunks that versions share:
// changing one element copies its chunk, its group of chunks and the list
// of groups, not the list (a change at full granularity used to touch
// every target's lists). A chunk ends after each name whose hash is a
// multiple of ChunkMean, a group after each whose hash is a multiple of
// groupMean ChunkMeans, so the layout depends on the names alone and
// equal lists are reflect.DeepEqual.
type List[T any] struct {
	groups [][][]T // never empty groups nor chunks
	n      int
}

// ChunkMean is the mean chunk length and groupMean the mean number of
// chunks in a group: a change copies about ChunkMean elements, groupMean
// chunk headers and one group header per ChunkMean*groupMean elements.
const (
	ChunkMean = 256
	groupMean = 64
)

// Len is the number of elements.
func (l List[T]) Len() int { return l.n }

// All yields the elements in order with their index.
func (l List[T]) All() iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		i := 0
		for _, g := range l.groups {
			for _, c := range g {
				for _, v := range c {
					if !yield(i, v) {
						return
					}
					i++
				}
			}
		}
	}
}

// Slice returns the elements in a new slice, nil when there are none.
func (l List[T]) Slice() []T {
	if l.n == 0 {
		return nil
	}
	out := make([]T, 0, l.n)
	for _, g := range l.groups {
		for _, c := range g {
			out = append(out, c...)
		}
	}
	return out
}

// MarshalJSON writes the list as a JSON array, null when empty.
func (l List[T]) MarshalJSON() ([]byte, error) { return json.Marshal(l.Slice()) }

// Of chunks s, sorted by key, sharing its array: s must not change.
func Of[T any](s []T, key func(T) string) List[T] {
	return List[T]{groups: grouped(chunked(s, key), key), n: len(s)}
}

// Sorted lists the elements of s other than the zero value, which has no
// name, sorted by key; s is left as it was. Elements of one name keep their
// order, so a list that holds a name twice stays what it was given.
func Sorted[T comparable](s []T, key func(T) string) List[T] {
	var zero T
	kept := make([]T, 0, len(s))
	for _, v := range s {
		if v != zero {
			kept = append(kept, v)
		}
	}
	slices.SortStableFunc(kept, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	return Of(kept, key)
}

// ByName is the key of an object with a name: cluster-scoped Kubernetes
// objects, for which the name is the whole key.
func ByName[T interface{ GetName() string }](v T) string { return v.GetName() }

func chunked[T any](s []T, key func(T) string) [][]T {
	var chunks [][]T
	start := 0
	for i, v := range s {
		if hashOf(key(v))%ChunkMean == 0 {
			chunks = append(chunks, s[start:i+1:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		chunks = append(chunks, s[start:len(s):len(s)])
	}
	return chunks
}

func grouped[T any](chunks [][]T, key func(T) string) [][][]T {
	var groups [][][]T
	start := 0
	for i, c := range chunks {
		if hashOf(key(c[len(c)-1]))%(ChunkMean*groupMean) == 0 {
			groups = append(groups, chunks[start:i+1:i+1])
			start = i + 1
		}
	}
	if start < len(chunks) {
		groups = append(groups, chunks[start:len(chunks):len(chunks)])
	}
	return groups
}

// hashOf is FNV-1a with MurmurHash3's finalizer, whose low bits FNV-1a
// alone leaves uneven: fixed, so that plans stay deterministic.
func hashOf(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// lastKey is the name of the last element of a group.
func lastKey[T any](g [][]T, key func(T) string) string {
	c := g[len(g)-1]
	return key(c[len(c)-1])
}

// search finds name: its group, chunk and index there, or where it would
// go (g == len(l.groups): after every element).
func (l List[T]) search(name string, key func(T) string) (g, c, i int, found bool) {
	g = sort.Search(len(l.groups), func(k int) bool { return lastKey(l.groups[k], key) >= name })
	if g == len(l.groups) {
		return g, 0, 0, false
	}
	chunks := l.groups[g]
	c = sort.Search(len(chunks), func(k int) bool { return key(chunks[k][len(chunks[k])-1]) >= name })
	i, found = slices.BinarySearchFunc(chunks[c], name, func(v T, name string) int { return strings.Compare(key(v), name) })
	return g, c, i, found
}

// Get returns the element named name.
func (l List[T]) Get(name string, key func(T) string) (T, bool) {
	g, c, i, found := l.search(name, key)
	if !found {
		var zero T
		return zero, false
	}
	return l.groups[g][c][i], true
}

// With returns the list with v added, or in place of the element of its
// name. Only v's hash can add a chunk or group end.
func (l List[T]) With(v T, key func(T) string) List[T] {
	g, c, i, found := l.search(key(v), key)
	if found { // the same name: the chunks stay as they are
		groups := slices.Clone(l.groups)
		groups[g] = slices.Clone(groups[g])
		groups[g][c] = slices.Clone(groups[g][c])
		groups[g][c][i] = v
		return List[T]{groups: groups, n: l.n}
	}
	if g == len(l.groups) { // after every element: a chunk or group of its own when the last ends one
		if g == 0 {
			return Of([]T{v}, key)
		}
		g--
		c = len(l.groups[g]) - 1
		i = len(l.groups[g][c])
		switch h := hashOf(key(l.groups[g][c][i-1])); {
		case h%(ChunkMean*groupMean) == 0:
			return List[T]{groups: slices.Concat(l.groups, [][][]T{{{v}}}), n: l.n + 1}
		case h%ChunkMean == 0:
			return l.replaced(g, g+1, slices.Concat(l.groups[g], [][]T{{v}}), -1, l.n+1)
		}
	}
	old := l.groups[g][c]
	elems := make([]T, len(old)+1)
	copy(elems, old[:i])
	elems[i] = v
	copy(elems[i+1:], old[i:])
	h := hashOf(key(v))
	mid := [][]T{elems}
	if h%ChunkMean == 0 && i < len(old) {
		mid = [][]T{elems[: i+1 : i+1], elems[i+1:]}
	}
	split := -1
	if h%(ChunkMean*groupMean) == 0 {
		split = c // the group ends with the chunk v ends
	}
	return l.replaced(g, g+1, slices.Concat(l.groups[g][:c], mid, l.groups[g][c+1:]), split, l.n+1)
}

// Replace returns the list with each element of vs in place of the
// element of its name, copying each chunk it changes once (a cache reads
// tens of updates between two plans); the elements of vs whose name l does
// not hold are returned apart.
func (l List[T]) Replace(vs []T, key func(T) string) (List[T], []T) {
	var groups [][][]T
	var rest []T
	copied := map[[2]int]bool{}
	for _, v := range vs {
		g, c, i, found := l.search(key(v), key)
		if !found {
			rest = append(rest, v)
			continue
		}
		if groups == nil {
			groups = slices.Clone(l.groups)
		}
		if !copied[[2]int{g, -1}] {
			groups[g], copied[[2]int{g, -1}] = slices.Clone(groups[g]), true
		}
		if !copied[[2]int{g, c}] {
			groups[g][c], copied[[2]int{g, c}] = slices.Clone(groups[g][c]), true
		}
		groups[g][c][i] = v
	}
	if groups == nil {
		return l, rest
	}
	return List[T]{groups: groups, n: l.n}, rest
}

// Without returns the list without the element named name, and whether it
// held it. Only a chunk or group end taken out changes the chunks.
func (l List[T]) Without(name string, key func(T) string) (List[T], bool) {
	g, c, i, found := l.search(name, key)
	if !found {
		return l, false
	}
	old := l.groups[g][c]
	var next []T
	g1 := g + 1
	rest := l.groups[g][c+1:]
	if i == len(old)-1 { // it ended its chunk, maybe its group: the next chunk joins
		switch {
		case c+1 < len(l.groups[g]):
			next, rest = l.groups[g][c+1], l.groups[g][c+2:]
		case g+1 < len(l.groups):
			next, rest, g1 = l.groups[g+1][0], l.groups[g+1][1:], g+2
		}
	}
	elems := make([]T, 0, len(old)-1+len(next))
	elems = append(append(append(elems, old[:i]...), old[i+1:]...), next...)
	var mid [][]T
	if len(elems) > 0 {
		mid = [][]T{elems}
	}
	return l.replaced(g, g1, slices.Concat(l.groups[g][:c], mid, rest), -1, l.n-1), true
}

// replaced replaces groups g0 to g1 by one group of chunks, or two when
// split is the index of the chunk ending the first, or none.
func (l List[T]) replaced(g0, g1 int, chunks [][]T, split, n int) List[T] {
	if n == 0 {
		return List[T]{}
	}
	var mid [][][]T
	switch {
	case split >= 0 && split+1 < len(chunks):
		mid = [][][]T{chunks[: split+1 : split+1], chunks[split+1:]}
	case len(chunks) > 0:
		mid = [][][]T{chunks}
	}
	return List[T]{groups: slices.Concat(l.groups[:g0], mid, l.groups[g1:]), n: n}
}
