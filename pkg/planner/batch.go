package planner

import "slices"

// batch builds many small strings with one allocation: a plan renders tens
// of thousands of CIDRs, names and messages, and one allocation per string
// would be most of the planner's garbage. The bytes are written into a
// buffer, the planner's scratch buffer when the batch comes from
// planner.batch, and copied once into one string when the batch is done.
type batch struct {
	buf  []byte
	ends []int
	// home is where buf goes back when the batch is done, nil if nowhere.
	home *[]byte
}

// batch starts a batch of about n strings of about size bytes each in the
// planner's scratch buffer, which it holds until it is done. A batch
// started while another is open gets a buffer of its own.
func (pl *planner) batch(n, size int) batch {
	b := batch{buf: pl.scratch[:0], home: &pl.scratch}
	pl.scratch = nil
	b.grow(n, size)
	return b
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
	return b.end()
}

// end ends the string appended to buf directly and returns its index.
func (b *batch) end() int {
	b.ends = append(b.ends, len(b.buf))
	return len(b.ends) - 1
}

// text ends the batch: it returns all its strings as one, to read with at,
// and gives the buffer back.
func (b *batch) text() string {
	all := string(b.buf)
	if b.home != nil {
		*b.home = b.buf[:0]
		b.home = nil
	}
	b.buf = nil
	return all
}

// at is the i-th string of all, which text returned.
func (b *batch) at(all string, i int) string {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return all[start:b.ends[i]]
}

// strings ends the batch and returns its strings, in the order they were added.
func (b *batch) strings() []string {
	all := b.text()
	out := make([]string, len(b.ends))
	start := 0
	for i, end := range b.ends {
		out[i] = all[start:end]
		start = end
	}
	return out
}
