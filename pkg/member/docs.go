package member

import (
	"bytes"
	"fmt"
	"strings"
)

// DocFiles are the documents, relative to the repository root, that list
// the member identity's rights. Each holds at least one block that
// RenderDocs writes from BaseRights and ServicesRights ('make generate');
// a test fails when one is stale.
var DocFiles = []string{
	"README.md",
	"docs/tutorial.md",
	"docs/security.md",
	"docs/install.md",
	"docs/reference.md",
	"artifacts/charts/kilo-mesh-member/README.md",
	"artifacts/charts/kilo-mesh-member/values.yaml",
}

// The markers of a block. In Markdown a block is
//
//	<!-- member-rights:NAME -->...<!-- /member-rights -->
//
// inline or over lines; in YAML it is the comment lines between
// "# member-rights:NAME" and "# /member-rights".
const (
	markerName = "member-rights:"
	markerEnd  = "/member-rights"
)

// docBlock is the text of the block name: base and services list the rights
// in words, base-table and services-table as Markdown tables.
func docBlock(name string) (string, error) {
	switch name {
	case "base":
		return InWords(BaseRights()), nil
	case "services":
		return InWords(ServicesRights()), nil
	case "base-table":
		return table(BaseRights()), nil
	case "services-table":
		return table(ServicesRights()), nil
	}
	return "", fmt.Errorf("no block %q: want base, services, base-table or services-table", name)
}

// InWords lists rights in a few words each, e.g. "read Nodes, manage Kilo
// Peers".
func InWords(rights []Right) string {
	words := make([]string, len(rights))
	for i, r := range rights {
		words[i] = r.What
	}
	return strings.Join(words, ", ")
}

func table(rights []Right) string {
	var b strings.Builder
	b.WriteString("\n| resource | verbs | what for |\n| --- | --- | --- |\n")
	for _, r := range rights {
		res := "`" + resourceOf(r.Rule) + "`"
		if names := r.Rule.ResourceNames; len(names) > 0 {
			res += " (`" + strings.Join(names, "`, `") + "` only)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", res, strings.Join(r.Rule.Verbs, ", "), r.Why)
	}
	return b.String()
}

// RenderDocs returns content with every block rewritten from pkg/member;
// yaml says the file is YAML (blocks in comments).
func RenderDocs(content []byte, yaml bool) ([]byte, error) {
	if yaml {
		return renderYAMLBlocks(content)
	}
	var out bytes.Buffer
	rest := content
	for {
		i := bytes.Index(rest, []byte("<!-- "+markerName))
		if i < 0 {
			out.Write(rest)
			return out.Bytes(), nil
		}
		open := i + bytes.Index(rest[i:], []byte("-->")) + len("-->")
		if open < i+len("-->") {
			return nil, fmt.Errorf("an unclosed marker %q", rest[i:min(len(rest), i+40)])
		}
		name := strings.TrimSpace(strings.TrimPrefix(string(rest[i+len("<!-- "):open-len("-->")]), markerName))
		end := bytes.Index(rest[open:], []byte("<!-- "+markerEnd+" -->"))
		if end < 0 {
			return nil, fmt.Errorf("block %s has no end marker <!-- %s -->", name, markerEnd)
		}
		text, err := docBlock(name)
		if err != nil {
			return nil, err
		}
		out.Write(rest[:open])
		out.WriteString(text)
		rest = rest[open+end:]
	}
}

// renderYAMLBlocks rewrites the comment blocks of a YAML file, wrapped.
func renderYAMLBlocks(content []byte) ([]byte, error) {
	lines := strings.SplitAfter(string(content), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		out.WriteString(line)
		prefix, name, ok := strings.Cut(line, "# "+markerName)
		if !ok {
			continue
		}
		text, err := docBlock(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) != "# "+markerEnd {
			j++
		}
		if j == len(lines) {
			return nil, fmt.Errorf("block %s has no end line # %s", strings.TrimSpace(name), markerEnd)
		}
		for _, l := range wrap(text, 76-len(prefix)) {
			out.WriteString(prefix + "# " + l + "\n")
		}
		i = j - 1
	}
	return []byte(out.String()), nil
}

// wrap breaks text into lines of at most width bytes, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
