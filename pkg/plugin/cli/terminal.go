package cli

import (
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// Terminal wraps w so that what member clusters wrote (node names, group
// names, messages quoting their annotations) cannot drive the terminal it
// is printed on: every control character but newline and tab, every
// Unicode format character (bidirectional overrides, zero-width ones) and
// every invalid byte is written as a Go escape (\x1b, \u202e). The server
// already refuses or escapes such text; this is the plugin's own guard.
func Terminal(w io.Writer) io.Writer { return terminal{w} }

type terminal struct{ w io.Writer }

func (t terminal) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			out = fmt.Appendf(out, `\x%02x`, p[i])
		case r == '\n' || r == '\t':
			out = append(out, p[i])
		case r < 0x80 && unicode.IsControl(r):
			out = fmt.Appendf(out, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
