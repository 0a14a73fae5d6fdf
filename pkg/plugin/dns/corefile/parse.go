// Package corefile reads a CoreDNS Corefile closely enough to edit one
// plugin's lines in place and leave every other byte as it was: tokens keep
// their offsets, so an edit is an insertion or a removal at known places,
// and undoing it gives the original text back.
package corefile

import (
	"fmt"
	"strings"
)

// Token is one word of the Corefile, as the Caddyfile lexer CoreDNS uses
// splits it: separated by blanks, quotes kept together, comments dropped.
type Token struct {
	Text string
	// Line is 1-based; Start and End are byte offsets of the token in the
	// source, quotes included.
	Line       int
	Start, End int
}

// Directive is one line of a block: a plugin (or a plugin's option) with
// its arguments, and the block it opens, if any.
type Directive struct {
	Name Token
	Args []Token
	// Open and Close are the braces of its block; nil without one.
	Open, Close *Token
	Body        []*Directive
}

// ServerBlock is a top-level block: its keys (zones and ports, or a
// snippet's name in parentheses) and its directives.
type ServerBlock struct {
	Keys        []Token
	Open, Close Token
	Directives  []*Directive
}

// Snippet tells whether the block defines a snippet for import.
func (s *ServerBlock) Snippet() bool {
	return len(s.Keys) == 1 && strings.HasPrefix(s.Keys[0].Text, "(") && strings.HasSuffix(s.Keys[0].Text, ")")
}

// Corefile is the parsed source.
type Corefile struct {
	Source  string
	Servers []*ServerBlock
	// Imports are the top-level import lines (files of further server
	// blocks).
	Imports []*Directive
}

// Parse reads src. It accepts the shape every distribution ships: server
// blocks with braces, one directive per line, blocks opened at the end of
// a line and closed on a line of their own.
func Parse(src string) (*Corefile, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	cf := &Corefile{Source: src}
	for !p.done() {
		if t := p.peek(); t.Text == "import" {
			d := &Directive{Name: p.next()}
			for !p.done() && p.peek().Line == t.Line {
				d.Args = append(d.Args, p.next())
			}
			cf.Imports = append(cf.Imports, d)
			continue
		}
		s, err := p.server()
		if err != nil {
			return nil, err
		}
		cf.Servers = append(cf.Servers, s)
	}
	return cf, nil
}

type parser struct {
	toks []Token
	i    int
}

func (p *parser) done() bool  { return p.i >= len(p.toks) }
func (p *parser) peek() Token { return p.toks[p.i] }
func (p *parser) next() Token { t := p.toks[p.i]; p.i++; return t }
func isOpen(t Token) bool     { return t.Text == "{" }
func isClose(t Token) bool    { return t.Text == "}" }
func (p *parser) atEnd() error {
	return fmt.Errorf("line %d: block not closed", p.toks[len(p.toks)-1].Line)
}

// server reads keys up to "{", then directives up to the matching "}".
func (p *parser) server() (*ServerBlock, error) {
	s := &ServerBlock{}
	for {
		if p.done() {
			if len(s.Keys) > 0 {
				return nil, fmt.Errorf("line %d: server block %s has no braces", s.Keys[0].Line, s.Keys[0].Text)
			}
			return nil, p.atEnd()
		}
		t := p.next()
		if isClose(t) {
			return nil, fmt.Errorf("line %d: unexpected }", t.Line)
		}
		if isOpen(t) {
			if len(s.Keys) == 0 {
				return nil, fmt.Errorf("line %d: a block without server keys", t.Line)
			}
			s.Open = t
			break
		}
		// Keys span lines only after a comma; a new line of keys without
		// one means a server block without braces.
		if len(s.Keys) > 0 && t.Line != s.Keys[len(s.Keys)-1].Line && !strings.HasSuffix(s.Keys[len(s.Keys)-1].Text, ",") {
			return nil, fmt.Errorf("line %d: server block %s has no braces", s.Keys[0].Line, s.Keys[0].Text)
		}
		s.Keys = append(s.Keys, t)
	}
	body, closing, err := p.body(s.Open)
	if err != nil {
		return nil, err
	}
	s.Directives, s.Close = body, closing
	return s, nil
}

// body reads directives until the "}" closing open.
func (p *parser) body(open Token) ([]*Directive, Token, error) {
	var out []*Directive
	for {
		if p.done() {
			return nil, Token{}, fmt.Errorf("line %d: block opened here is not closed", open.Line)
		}
		t := p.next()
		if isClose(t) {
			return out, t, nil
		}
		if isOpen(t) {
			return nil, Token{}, fmt.Errorf("line %d: { without a directive", t.Line)
		}
		if t.Line == open.Line {
			return nil, Token{}, fmt.Errorf("line %d: a directive on the line of its block's {", t.Line)
		}
		d := &Directive{Name: t}
		for !p.done() && p.peek().Line == t.Line {
			a := p.next()
			if isClose(a) {
				return nil, Token{}, fmt.Errorf("line %d: } after a directive on its line", a.Line)
			}
			if isOpen(a) {
				if !p.done() && p.peek().Line == a.Line {
					return nil, Token{}, fmt.Errorf("line %d: text after {", a.Line)
				}
				open := a
				d.Open = &open
				sub, closing, err := p.body(a)
				if err != nil {
					return nil, Token{}, err
				}
				d.Body, d.Close = sub, &closing
				break
			}
			d.Args = append(d.Args, a)
		}
		out = append(out, d)
	}
}

// lex splits src into tokens with their offsets.
func lex(src string) ([]Token, error) {
	var toks []Token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '`':
			start, startLine := i, line
			var b strings.Builder
			i++
			for ; i < len(src) && src[i] != c; i++ {
				if c == '"' && src[i] == '\\' && i+1 < len(src) && src[i+1] == '"' {
					i++
				}
				if src[i] == '\n' {
					line++
				}
				b.WriteByte(src[i])
			}
			if i >= len(src) {
				return nil, fmt.Errorf("line %d: quote not closed", startLine)
			}
			i++
			toks = append(toks, Token{Text: b.String(), Line: startLine, Start: start, End: i})
		default:
			start := i
			for i < len(src) && !strings.ContainsRune(" \t\r\n", rune(src[i])) {
				i++
			}
			toks = append(toks, Token{Text: src[start:i], Line: line, Start: start, End: i})
		}
	}
	return toks, nil
}
