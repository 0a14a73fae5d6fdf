package planner

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// What a member cluster writes is bounded and checked where it enters the
// plan: a member API server may be a fake, not bound by kube-apiserver's
// rules, and its strings end up in the annotations of Peers on every
// cluster of the mesh (the host's included) and on administrators'
// terminals.
const (
	// MaxLocationBytes bounds a node's location (kilo.squat.ai/location or
	// the topology label): it names the node's group, which every Peer
	// representing the group carries in an annotation.
	MaxLocationBytes = 128
	// maxQuotedBytes is how much of a member's value a plan message quotes.
	maxQuotedBytes = 64
	// maxNodeNotes is how many notes the plan lists for one node.
	maxNodeNotes = 16
)

// invalidNodesLead summarises the nodes left out for their name.
const invalidNodesLead = "nodes whose name Kubernetes would not store (the member is not a conforming API server); left out"

// memberText quotes a member's value for a plan message: escaped (control,
// format and invalid characters as Go escapes them) and cut to
// maxQuotedBytes, with its full size said when cut.
func memberText(s string) string {
	if len(s) <= maxQuotedBytes {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxQuotedBytes]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// nodeNameProblem says why a Node name is not one Kubernetes would store
// (a DNS subdomain of at most 253 characters), or "".
func nodeNameProblem(name string) string {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return errs[0]
	}
	return ""
}

// locationProblem says why a location cannot name a group, or "": longer
// than MaxLocationBytes, not UTF-8, or holding a character that is not
// printable (control characters, bidirectional overrides and other
// format characters would reach terminals through the Peers' annotations).
func locationProblem(loc string) string {
	switch {
	case len(loc) > MaxLocationBytes:
		return "longer than " + strconv.Itoa(MaxLocationBytes) + " bytes"
	case !utf8.ValidString(loc):
		return "not valid UTF-8"
	}
	for _, r := range loc {
		if !unicode.IsPrint(r) {
			return "holds a character that is not printable (" + strconv.QuoteRune(r) + ")"
		}
	}
	return ""
}
