package transcripts

import (
	"os"
	"strings"
	"testing"
)

// TestTutorialBlocks: every console block of the tutorial reads as
// commands and their output, and writing them back changes nothing, so
// that the end-to-end test (TestTutorial, build tag e2e) runs what the page
// shows and rewrites only outputs.
func TestTutorialBlocks(t *testing.T) {
	data, err := os.ReadFile("../../docs/tutorial.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	blocks, err := ConsoleBlocks(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 10 {
		t.Fatalf("%d console blocks: the test no longer reads the page", len(blocks))
	}
	if got := Rewrite(page, blocks); got != page {
		t.Error("rewriting the blocks unchanged changes the page: trailing blanks, or a block the reader skips")
	}
	for _, b := range blocks {
		for _, s := range b.Steps {
			if strings.TrimSpace(s.Command) == "" {
				t.Errorf("line %d: an empty command", b.Start)
			}
		}
	}
}

func TestConsoleBlocks(t *testing.T) {
	page := "text\n```console\n$ a \\\n  --b\none\n$ c\n```\n(exit code 2)\n\n  ```console\n  $ d\n  two\n  ```\n"
	blocks, err := ConsoleBlocks(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("%d blocks", len(blocks))
	}
	if b := blocks[0]; len(b.Steps) != 2 || b.Steps[0].Command != "a \\\n  --b" || strings.Join(b.Steps[0].Output, "|") != "one" ||
		b.Steps[1].Command != "c" || len(b.Steps[1].Output) != 0 || b.ExitCode != 2 {
		t.Errorf("first block %+v", b)
	}
	if b := blocks[1]; b.Indent != "  " || b.Steps[0].Command != "d" || strings.Join(b.Steps[0].Output, "|") != "two" || b.ExitCode != 0 {
		t.Errorf("second block %+v", b)
	}
	blocks[1].Steps[0].Output = []string{"three", "four"}
	if got, want := Rewrite(page, blocks), strings.Replace(page, "  two\n", "  three\n  four\n", 1); got != want {
		t.Errorf("Rewrite:\n%s\nwant:\n%s", got, want)
	}
	for _, bad := range []string{"```console\nout\n```\n", "```console\n$ a\n", "```console\n```\n"} {
		if _, err := ConsoleBlocks(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tt := range []struct{ a, b string }{
		{"Ready   True  2026-11-22T21:02:05Z  ok", "Ready True 2027-01-02T03:04:05Z ok"},
		{"21:01:47 etcd ready at http://127.0.0.1:34801 (539ms)", "04:11:02 etcd ready at http://127.0.0.1:4101 (1.2s)"},
		{"demo   2    True   4/4   0   47s", "demo 2 True 4/4 0 2m3s"},
		{"PublicKey = GZPRTHrkjsjIoVAJf+30mRuXCKE6KFvEWEVutQQjCn4=", "PublicKey = 6QNBrS/P3PcNRnpDBv3GjUVfvlzYzfmpU+DAdRE+qng="},
		{`hello   ClusterSetIP   ["10.53.20.188"]`, `hello ClusterSetIP ["10.53.7.1"]`},
		{"endpointslice.discovery.k8s.io/hello-28w4w   IPv4", "endpointslice.discovery.k8s.io/hello-x9zkq IPv4"},
		{"-X pkg/version.gitVersion=v0.0.0-6e04fb8a3cef -o", "-X pkg/version.gitVersion=v0.1.0-dirty -o"},
	} {
		if Normalize([]string{tt.a}) != Normalize([]string{tt.b}) {
			t.Errorf("%q and %q differ: %q, %q", tt.a, tt.b, Normalize([]string{tt.a}), Normalize([]string{tt.b}))
		}
	}
	// What must stay compared.
	for _, tt := range []struct{ a, b string }{
		{"Ready True", "Ready False"},
		{"podCIDRs 10.62.0.0/16", "podCIDRs 10.63.0.0/16"},
		{"serviceCIDR 10.63.0.0/16", "serviceCIDR 10.53.0.0/16"},
		{"ENDPOINTS 10.52.1.10,10.52.2.10", "ENDPOINTS 10.52.1.10"},
		{"demo-east-location-dc1-myeeygo6at", "demo-east-location-dc1-fwqueyc7fe"},
		{"service/derived-clkj3a8mu9", "service/derived-aaaa3a8mu9"},
		{"all 12 desired Peers", "all 4 desired Peers"},
		{"a\nb", "a"},
	} {
		if Normalize([]string{tt.a}) == Normalize([]string{tt.b}) {
			t.Errorf("%q and %q compare equal: %q", tt.a, tt.b, Normalize([]string{tt.a}))
		}
	}
}

func TestReadOnly(t *testing.T) {
	for cmd, want := range map[string]bool{
		"kubectl get clustermeshes":                true,
		"kubectl mesh status demo --wait":          true,
		"kubectl mesh join demo --name n":          false,
		"kubectl mesh join demo --dry-run > x":     true,
		"kubectl annotate node n kilo.squat.ai/k-": false,
		"kubectl delete serviceexport hello":       false,
		"kubectl mesh leave demo --name north":     false,
		"grep -E x north-dry-run.yaml":             true,
		"make run":                                 false,
	} {
		if got := readOnly(cmd); got != want {
			t.Errorf("readOnly(%q) = %v", cmd, got)
		}
	}
}

func TestDisplay(t *testing.T) {
	p := Paths{{"/tmp/x", "~/.cache"}, {"/home/u", "~"}}
	got := p.Display("at /tmp/x/run and /home/u/bin\nwaiting for north to leave (0s): generation 4 not observed yet\nwaiting for north to leave (1s): Removing: 2 Peers\ndone\n")
	if want := []string{"at ~/.cache/run and ~/bin", "done"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Display: %q, want %q", got, want)
	}
}
