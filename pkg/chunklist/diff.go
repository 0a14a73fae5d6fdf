package chunklist

// Diff walks two versions of a list, old and cur, in name order and yields
// what differs: (o, zero) for a name only old holds, (zero, n) for one only
// cur holds, and (o, n) when the elements of one name are not the same
// value. It skips whatever chunk or group of chunks the two versions share,
// so comparing a list of thousands after a few changes costs about the
// chunks those changes copied. It returns false when yield did, or when a
// walked part does not hold each name once in order, which callers treat as
// "cannot say what changed".
func Diff[T comparable](old, cur List[T], key func(T) string, yield func(o, n T) bool) bool {
	var zero T
	a, b := cursor[T]{l: &old}, cursor[T]{l: &cur}
	var prevA, prevB string
	seenA, seenB := false, false
	for !a.done() || !b.done() {
		if !a.done() && !b.done() && a.i == 0 && b.i == 0 {
			if a.c == 0 && b.c == 0 && same(old.groups[a.g], cur.groups[b.g]) {
				prevA, seenA = lastKey(old.groups[a.g], key), true
				prevB, seenB = prevA, true
				a.g, b.g = a.g+1, b.g+1
				continue
			}
			ca, cb := a.chunk(), b.chunk()
			replaced, ok := replacedIn(ca, cb, key)
			if ok {
				for _, i := range replaced {
					if !yield(ca[i], cb[i]) {
						return false
					}
				}
				prevA, seenA = key(ca[len(ca)-1]), true
				prevB, seenB = prevA, true
				a.skipChunk()
				b.skipChunk()
				continue
			}
		}
		var ka, kb string
		if !a.done() {
			if ka = key(a.at()); seenA && ka <= prevA {
				return false
			}
		}
		if !b.done() {
			if kb = key(b.at()); seenB && kb <= prevB {
				return false
			}
		}
		switch {
		case b.done() || (!a.done() && ka < kb):
			if !yield(a.at(), zero) {
				return false
			}
			prevA, seenA = ka, true
			a.next()
		case a.done() || ka > kb:
			if !yield(zero, b.at()) {
				return false
			}
			prevB, seenB = kb, true
			b.next()
		default:
			if o, n := a.at(), b.at(); o != n && !yield(o, n) {
				return false
			}
			prevA, prevB, seenA, seenB = ka, kb, true, true
			a.next()
			b.next()
		}
	}
	return true
}

// replacedIn compares two chunks position by position, by pointer, as
// member caches replace the objects they update: it returns the positions
// holding another value of the same name, and false when a position holds
// another name (something was added or removed: merge by name instead).
// Comparing by name alone would read the name of every element of a chunk.
func replacedIn[T comparable](a, b []T, key func(T) string) ([]int, bool) {
	if len(a) != len(b) {
		return nil, false
	}
	if same(a, b) {
		return nil, true
	}
	var replaced []int
	for i := range a {
		if a[i] != b[i] {
			if key(a[i]) != key(b[i]) {
				return nil, false
			}
			replaced = append(replaced, i)
		}
	}
	return replaced, true
}

// same reports whether two slices are one: the same array, the same length.
func same[E any](x, y []E) bool {
	return len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
}

// cursor is a position in a list: group g, chunk c of it, element i of that.
type cursor[T any] struct {
	l       *List[T]
	g, c, i int
}

func (k *cursor[T]) done() bool { return k.g == len(k.l.groups) }

func (k *cursor[T]) chunk() []T { return k.l.groups[k.g][k.c] }

func (k *cursor[T]) at() T { return k.l.groups[k.g][k.c][k.i] }

func (k *cursor[T]) next() {
	if k.i++; k.i == len(k.chunk()) {
		k.skipChunk()
	}
}

func (k *cursor[T]) skipChunk() {
	k.i = 0
	if k.c++; k.c == len(k.l.groups[k.g]) {
		k.c, k.g = 0, k.g+1
	}
}
