package cli

import (
	"bytes"
	"fmt"
	"testing"
)

func TestTerminal(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text, tabs and newlines", "a\tb\nc ü\n", "a\tb\nc ü\n"},
		{"escape sequence", "node \x1b]0;owned\x07 \x1b[2J", `node \x1b]0;owned\x07 \x1b[2J`},
		{"carriage return and backspace", "ok\rFAIL\b", `ok\x0dFAIL\x08`},
		{"C1 control", "a\u009bb", `a\u009bb`},
		{"bidirectional override and zero width", "a\u202eb\u200bc", `a\u202eb\u200bc`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		{"delete", "a\x7fb", `a\x7fb`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := fmt.Fprint(Terminal(&buf), tc.in)
			if err != nil || n != len(tc.in) {
				t.Fatalf("wrote %d of %d bytes: %v", n, len(tc.in), err)
			}
			if buf.String() != tc.want {
				t.Errorf("got %q, want %q", buf.String(), tc.want)
			}
		})
	}
}
