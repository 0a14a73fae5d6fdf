package planner

import "slices"

// batch builds many small strings with one allocation: a plan renders tens
// of thousands of CIDRs and messages, and one allocation per string would
// be most of the planner's garbage.
type batch struct {
	buf  []byte
	ends []int
}

// grow makes room for n more strings of about size bytes each.
func (b *batch) grow(n, size int) {
	b.buf = slices.Grow(b.buf, n*size)
	b.ends = slices.Grow(b.ends, n)
}

// add appends one string made of parts and returns its index.
func (b *batch) add(parts ...string) int {
	for _, p := range parts {
		b.buf = append(b.buf, p...)
	}
	b.ends = append(b.ends, len(b.buf))
	return len(b.ends) - 1
}

// addBytes appends one string written by appendTo and returns its index.
func (b *batch) addBytes(appendTo func([]byte) []byte) int {
	b.buf = appendTo(b.buf)
	b.ends = append(b.ends, len(b.buf))
	return len(b.ends) - 1
}

// end ends the string appended to buf directly and returns its index.
func (b *batch) end() int {
	b.ends = append(b.ends, len(b.buf))
	return len(b.ends) - 1
}

// strings materialises the strings, in the order they were added.
func (b *batch) strings() []string {
	all := string(b.buf)
	out := make([]string, len(b.ends))
	start := 0
	for i, end := range b.ends {
		out[i] = all[start:end]
		start = end
	}
	return out
}
