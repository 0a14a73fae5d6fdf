package member

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every document that lists the identity's rights holds them as blocks
// written from BaseRights and ServicesRights, and they are current: a
// changed rule without 'make generate' fails here (and in make verify).
func TestDocsAreCurrent(t *testing.T) {
	for _, doc := range DocFiles {
		t.Run(doc, func(t *testing.T) {
			content, err := os.ReadFile(filepath.Join("..", "..", doc))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(content), markerName+"base") || !strings.Contains(string(content), markerName+"services") {
				t.Errorf("%s lists no base or no services rights from pkg/member: add the blocks member-rights:base[-table] and member-rights:services[-table]", doc)
			}
			want, err := RenderDocs(content, strings.HasSuffix(doc, ".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if string(want) != string(content) {
				t.Errorf("%s lists rights that are not pkg/member's: run 'make generate'", doc)
			}
		})
	}
}

func TestRenderDocs(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		yaml           bool
		wantErr        bool
	}{
		{name: "inline", in: "has <!-- member-rights:base -->old words<!-- /member-rights --> here",
			want: "has <!-- member-rights:base -->read Nodes, get the namespace kube-system, manage Kilo Peers<!-- /member-rights --> here"},
		{name: "table", in: "<!-- member-rights:base-table -->\n| stale |\n<!-- /member-rights -->\nafter",
			want: "<!-- member-rights:base-table -->\n| resource | verbs | what for |\n| --- | --- | --- |\n" +
				"| `nodes` | get, list, watch | Kilo's annotations: keys, endpoints, leaders, locations |\n" +
				"| `namespaces` (`kube-system` only) | get | its UID verifies which cluster a kubeconfig reaches |\n" +
				"| `peers.kilo.squat.ai` | get, list, watch, create, update, patch, delete | the mesh's Peers: server-side apply, updates, deletes with a UID precondition |\n" +
				"<!-- /member-rights -->\nafter"},
		{name: "yaml", yaml: true, in: "a: 1\n  # member-rights:base\n  # stale\n  # /member-rights\nb: 2\n",
			want: "a: 1\n  # member-rights:base\n  # read Nodes, get the namespace kube-system, manage Kilo Peers\n  # /member-rights\nb: 2\n"},
		{name: "unknown block", in: "<!-- member-rights:everything -->x<!-- /member-rights -->", wantErr: true},
		{name: "no end", in: "<!-- member-rights:base -->x", wantErr: true},
		{name: "yaml without end", yaml: true, in: "# member-rights:base\n# x\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderDocs([]byte(tc.in), tc.yaml)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if !tc.wantErr && string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
