package planner

import (
	"encoding/json"
	"iter"
	"slices"
	"sort"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// List is a read-only list sorted by name, held in chunks that plans share:
// changing one element copies its chunk and the chunk index, not the list
// (issue 21: a change at full granularity touched every target's lists).
// A chunk ends after each name whose hash is a multiple of chunkMean, so the
// chunks depend on the names alone and equal lists are reflect.DeepEqual.
type List[T any] struct {
	parts [][]T // never empty ones
	n     int
}

// chunkMean is the mean chunk length: a change copies about chunkMean
// elements and one chunk index entry per chunkMean elements of the list.
const chunkMean = 256

// PeerList lists the Peers desired on one target.
type PeerList = List[*kilov1alpha1.Peer]

// NameList lists the names of Peers.
type NameList = List[string]

func peerName(p *kilov1alpha1.Peer) string { return p.Name }

func self(s string) string { return s }

// PeerListOf lists peers; they must be sorted by name for a plan to find one.
func PeerListOf(peers ...*kilov1alpha1.Peer) PeerList { return listOf(peers, peerName) }

// Len is the number of elements.
func (l List[T]) Len() int { return l.n }

// All yields the elements in order with their index.
func (l List[T]) All() iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		i := 0
		for _, part := range l.parts {
			for _, v := range part {
				if !yield(i, v) {
					return
				}
				i++
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
	for _, part := range l.parts {
		out = append(out, part...)
	}
	return out
}

// MarshalJSON writes the list as a JSON array, null when empty.
func (l List[T]) MarshalJSON() ([]byte, error) { return json.Marshal(l.Slice()) }

// listOf chunks s, sorted by key, sharing its array: s must not change.
func listOf[T any](s []T, key func(T) string) List[T] {
	return List[T]{parts: chunk(s, key), n: len(s)}
}

func chunk[T any](s []T, key func(T) string) [][]T {
	var parts [][]T
	start := 0
	for i, v := range s {
		if endsChunk(key(v)) {
			parts = append(parts, s[start:i+1:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		parts = append(parts, s[start:len(s):len(s)])
	}
	return parts
}

// endsChunk hashes name with FNV-1a: fixed, so that plans stay deterministic.
func endsChunk(name string) bool {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h%chunkMean == 0
}

// search finds name: its chunk and its index there, or where it would go.
func (l List[T]) search(name string, key func(T) string) (p, i int, found bool) {
	p = sort.Search(len(l.parts), func(k int) bool {
		part := l.parts[k]
		return key(part[len(part)-1]) >= name
	})
	if p == len(l.parts) {
		return p, 0, false
	}
	i, found = slices.BinarySearchFunc(l.parts[p], name, func(v T, name string) int { return strings.Compare(key(v), name) })
	return p, i, found
}

// get returns the element named name.
func (l List[T]) get(name string, key func(T) string) (T, bool) {
	p, i, found := l.search(name, key)
	if !found {
		var zero T
		return zero, false
	}
	return l.parts[p][i], true
}

// with returns the list with v added, or in place of the element of its name.
func (l List[T]) with(v T, key func(T) string) List[T] {
	p, i, found := l.search(key(v), key)
	if found {
		parts := slices.Clone(l.parts)
		parts[p] = slices.Clone(parts[p])
		parts[p][i] = v
		return List[T]{parts: parts, n: l.n}
	}
	if p == len(l.parts) { // after every element: the last chunk is the one not ended by a hash
		if p == 0 {
			return listOf([]T{v}, key)
		}
		p--
		i = len(l.parts[p])
	}
	return l.splice(p, p+1, slices.Insert(slices.Clone(l.parts[p]), i, v), l.n+1, key)
}

// without returns the list without the element named name, and whether it held it.
func (l List[T]) without(name string, key func(T) string) (List[T], bool) {
	p, i, found := l.search(name, key)
	if !found {
		return l, false
	}
	end := p + 1
	elems := slices.Delete(slices.Clone(l.parts[p]), i, i+1)
	if i == len(l.parts[p])-1 && end < len(l.parts) { // it ended its chunk: the next one joins
		elems = append(elems, l.parts[end]...)
		end++
	}
	return l.splice(p, end, elems, l.n-1, key), true
}

// splice replaces chunks a to b by elems, chunked again.
func (l List[T]) splice(a, b int, elems []T, n int, key func(T) string) List[T] {
	mid := chunk(elems, key)
	if n == 0 {
		return List[T]{}
	}
	parts := make([][]T, 0, len(l.parts)-(b-a)+len(mid))
	parts = append(append(append(parts, l.parts[:a]...), mid...), l.parts[b:]...)
	return List[T]{parts: parts, n: n}
}
