package corefile

import (
	"slices"
	"strings"
)

// edit replaces del bytes at offset at with text.
type edit struct {
	at, del int
	text    string
}

// apply makes edits, which never overlap, on src; edits at one offset keep
// their order.
func apply(src string, edits []edit) string {
	edits = slices.Clone(edits)
	slices.SortStableFunc(edits, func(a, b edit) int { return a.at - b.at })
	var b strings.Builder
	prev := 0
	for _, e := range edits {
		b.WriteString(src[prev:e.at])
		b.WriteString(e.text)
		prev = e.at + e.del
	}
	b.WriteString(src[prev:])
	return b.String()
}

// removeToken removes t and the blanks between it and prev, the token
// before it on its line.
func removeToken(prev, t Token) edit {
	return edit{at: prev.End, del: t.End - prev.End}
}

// lineStart is the offset of the start of the line holding offset i.
func lineStart(src string, i int) int {
	return strings.LastIndexByte(src[:i], '\n') + 1
}

// lineEnd is the offset just after the newline ending the line holding
// offset i (the end of src on its last line).
func lineEnd(src string, i int) int {
	if j := strings.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(src)
}

// indentOf is the blank prefix of the line holding offset i.
func indentOf(src string, i int) string {
	start := lineStart(src, i)
	end := start
	for end < len(src) && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	return src[start:end]
}
