package planner

import (
	"strings"
	"testing"
	"unicode"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

func TestMemberText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"short", "10.0.0.1", `"10.0.0.1"`},
		{"control characters escaped", "a\x1b[2Jb\r\n", `"a\x1b[2Jb\r\n"`},
		{"bidirectional override escaped", "a\u202eb", `"a\u202eb"`},
		{"long cut, size said", strings.Repeat("x", 30000), `"` + strings.Repeat("x", maxQuotedBytes) + `"... (30000 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := memberText(tc.in); got != tc.want {
				t.Errorf("memberText = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestLocationProblem(t *testing.T) {
	for _, tc := range []struct {
		name, loc string
		bad       bool
	}{
		{"empty", "", false},
		{"ordinary", "gcp-europe-west1", false},
		{"non-ASCII letters", "zürich", false},
		{"at the bound", strings.Repeat("a", MaxLocationBytes), false},
		{"over the bound", strings.Repeat("a", MaxLocationBytes+1), true},
		{"escape sequence", "fra\x1b]0;owned\x07", true},
		{"newline", "fra\nbogus line", true},
		{"bidirectional override", "fra\u202e", true},
		{"invalid UTF-8", "fra\xff", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := locationProblem(tc.loc) != ""; got != tc.bad {
				t.Errorf("refused %v, want %v (%s)", got, tc.bad, locationProblem(tc.loc))
			}
		})
	}
}

// TestMemberStringsBounded: a member's Nodes with a name Kubernetes would
// not store, or a location too long or with control characters, are left
// out with a reason; no Peer annotation and no plan message carries a
// member's string unbounded or unescaped.
func TestMemberStringsBounded(t *testing.T) {
	in := testInput(t)
	long := strings.Repeat("L", 30000)
	annotate(node(t, in, "us", "us-1"), kilov1alpha1.AnnotationLocation, "fra\x1b]0;owned\x07")
	annotate(node(t, in, "us", "us-2"), kilov1alpha1.AnnotationLocation, long)
	annotate(node(t, in, "us", "us-3"), kilov1alpha1.AnnotationPersistentKeepalive, long+"\x1b", kilov1alpha1.AnnotationForceEndpoint, "\x1b[1m"+long,
		kilov1alpha1.AnnotationAllowedLocationIPs, strings.Repeat("x,", 5000))
	evil := readyNode("evil\x1b[2J", nil)
	in.Clusters["us"] = ClusterSnapshot{Reachable: true, Nodes: in.Clusters["us"].Nodes.With(evil, nodeName)}
	p := mustCompute(t, in)
	if notes := len(decision(t, p, "us", "us-3").Notes); notes == 0 || notes > maxNodeNotes+1 {
		t.Fatalf("us-3's malformed annotations made %d notes, want 1 to %d", notes, maxNodeNotes+1)
	}

	for node, reason := range map[string]string{"us-1": ReasonInvalidLocation, "us-2": ReasonInvalidLocation, memberText("evil\x1b[2J"): ReasonInvalidNodeName} {
		if d := decision(t, p, "us", node); d.Reason != reason {
			t.Errorf("node %s: %s, want %s", node, d.Reason, reason)
		}
	}
	if !hasWarning(p, WarningInvalidNodes, "us") {
		t.Errorf("no %s warning: %v", WarningInvalidNodes, p.View.Warnings)
	}
	clean := func(where, s string) {
		if len(s) > 2000 || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			t.Errorf("%s carries a member's string raw or unbounded (%d bytes): %.200q", where, len(s), s)
		}
	}
	for target, peers := range p.DesiredPeers {
		for _, peer := range peers.All() {
			for k, v := range peer.Annotations {
				clean(target+"/"+peer.Name+" "+k, v)
			}
		}
	}
	for _, c := range p.View.Clusters {
		for _, d := range p.Nodes[c.Name].All() {
			clean("node "+d.Node, d.Node)
			clean("decision of "+d.Node, d.Message)
			for _, n := range d.Notes {
				clean("note of "+d.Node, n.Message)
			}
		}
	}
	for _, i := range append(p.View.Conflicts, p.View.Warnings...) {
		clean("issue "+i.Reason, i.Message)
	}
}

func hasWarning(p *Plan, reason, cluster string) bool {
	for _, w := range p.View.Warnings {
		if w.Reason == reason && w.Cluster == cluster {
			return true
		}
	}
	return false
}
