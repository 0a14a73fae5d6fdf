package planner

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n%s", name, firstDifference(got, want))
	}
}

// goldenScenarios are whole-mesh situations whose plans are kept verbatim.
var goldenScenarios = map[string]func(t *testing.T) Input{
	"first-plan": func(t *testing.T) Input { return testInput(t) },
	"steady-state-us-unreachable": func(t *testing.T) Input {
		in := applied(t)
		in.Clusters["us"] = ClusterSnapshot{Error: "Get \"https://us.example.com:6443/api/v1/nodes\": dial tcp: i/o timeout"}
		annotate(node(t, in, "eu", "fra-1"), kilov1alpha1.AnnotationLastSeen, "1") // fra's leader changes meanwhile
		return in
	},
	// us and home behind NAT, relayed through eu; us held a Peer of home.
	"relayed-nat-pair": func(t *testing.T) Input {
		in := applied(t)
		entry(&in, "us").BehindNAT = true
		entry(&in, "home").BehindNAT = true
		return in
	},
	// Both behind NAT and nobody to relay: no path, named.
	"nat-pair-without-relay": func(t *testing.T) Input {
		in := natInput(t)
		in.Spec.Clusters = slices.DeleteFunc(in.Spec.Clusters, func(c meshv1alpha1.ClusterEntry) bool { return c.Name == "eu" })
		delete(in.Clusters, "eu")
		return in
	},
}

func TestGoldenPlans(t *testing.T) {
	for name, mk := range goldenScenarios {
		t.Run(name, func(t *testing.T) {
			p := mustCompute(t, mk(t))
			view, err := yaml.Marshal(p.ServedView())
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".plan.yaml", view)
			peers, err := yaml.Marshal(p.DesiredPeers)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".peers.yaml", peers)
		})
	}
}

func TestRenderPeerList(t *testing.T) {
	in := applied(t)
	in.Clusters["us"] = ClusterSnapshot{Error: "timeout"} // kept Peers come from the cluster: server fields must go
	for _, p := range in.Clusters["eu"].Peers.All() {
		p.UID, p.Generation, p.Spec.PresharedKey = "1234", 3, ""
	}
	p := mustCompute(t, in)
	out, err := RenderPeerList(p, "eu", PeerListYAML)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "peers-eu.yaml", out)

	var list struct {
		APIVersion string                   `json:"apiVersion"`
		Kind       string                   `json:"kind"`
		Items      []map[string]interface{} `json:"items"`
	}
	if err := yaml.Unmarshal(out, &list); err != nil {
		t.Fatal(err)
	}
	if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != p.DesiredPeers["eu"].Len() {
		t.Fatalf("list %s/%s with %d items", list.APIVersion, list.Kind, len(list.Items))
	}
	for _, item := range list.Items {
		if item["apiVersion"] != "kilo.squat.ai/v1alpha1" || item["kind"] != "Peer" || item["status"] != nil {
			t.Errorf("item %v", item)
		}
		meta := item["metadata"].(map[string]interface{})
		for _, f := range []string{"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields"} {
			if _, ok := meta[f]; ok {
				t.Errorf("item %s carries %s", meta["name"], f)
			}
		}
		b, _ := yaml.Marshal(item)
		var peer kilov1alpha1.Peer
		if err := yaml.UnmarshalStrict(b, &peer); err != nil {
			t.Errorf("item does not decode as a Peer: %v", err)
		}
		if errs := peer.Validate(); len(errs) > 0 {
			t.Errorf("%s: %v", peer.Name, errs)
		}
	}

	// The JSON rendering is the same list, as JSON.
	asJSON, err := RenderPeerList(p, "eu", PeerListJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(asJSON) {
		t.Fatalf("JSON rendering is not JSON:\n%s", asJSON)
	}
	fromYAML, err := yaml.YAMLToJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	var a, b interface{}
	if err := json.Unmarshal(asJSON, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fromYAML, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("JSON and YAML renderings differ:\n%s\n---\n%s", asJSON, out)
	}

	for _, format := range []PeerListFormat{PeerListYAML, PeerListJSON} {
		empty, err := RenderPeerList(p, "nowhere", format)
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Items []interface{} `json:"items"`
		}
		if err := yaml.Unmarshal(empty, &l); err != nil || l.Items == nil || len(l.Items) != 0 {
			t.Errorf("empty list in format %d: want items: [], got %s (%v)", format, empty, err)
		}
	}
}

func TestRenderWireGuard(t *testing.T) {
	in := testInput(t)
	annotate(node(t, in, "home", "home-1"), kilov1alpha1.AnnotationClusterMeshEndpoint, "-")
	annotate(node(t, in, "us", "us-1"), kilov1alpha1.AnnotationForceEndpoint, "[2600:1f18::11]:51820")
	p := mustCompute(t, in)
	out := RenderWireGuard(p, "eu")
	golden(t, "wireguard-eu.conf", out)
	s := string(out)
	for _, want := range []string{
		"Endpoint = [2600:1f18::11]:51820",
		"Endpoint = us-2.mesh.example.com:51820",
		"# home/location:home, leader home-1 (Peer ",
		"PersistentKeepalive = 25",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q", want)
		}
	}
	if n := strings.Count(s, "[Peer]"); n != p.DesiredPeers["eu"].Len() {
		t.Errorf("%d [Peer] sections for %d Peers", n, p.DesiredPeers["eu"].Len())
	}
	home := s[strings.Index(s, "# home/"):]
	home = home[:strings.Index(home[1:], "\n# ")+1]
	if strings.Contains(home, "Endpoint") {
		t.Errorf("roaming peer with an endpoint:\n%s", home)
	}
}

func TestRenderDOT(t *testing.T) {
	in := applied(t)
	in.Clusters["home"] = ClusterSnapshot{Error: "connection \"refused\""}
	annotate(node(t, in, "eu", "edge-1"), kilov1alpha1.AnnotationClusterMeshEndpoint, "bad")
	p := mustCompute(t, in)
	out := RenderDOT(p)
	golden(t, "mesh.dot", out)
	for _, want := range []string{`subgraph "cluster_eu"`, `"eu/location:fra" -- "us/node:us-1";`, `style=dashed`, `not exported: MalformedEndpoint`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("missing %s", want)
		}
	}
	if !bytes.Equal(out, RenderDOT(mustCompute(t, shuffled(randSource(), in)))) {
		t.Error("DOT output depends on input order")
	}
	checkDOTSyntax(t, out)
}

func TestRenderDOTSummarisesBigMeshes(t *testing.T) {
	in := benchInput(2, 100, "full")
	out := RenderDOT(mustCompute(t, in))
	if n := bytes.Count(out, []byte(" -- ")); n != 1 || !bytes.Contains(out, []byte("100 x 100 tunnels")) {
		t.Errorf("%d edges drawn", n)
	}
	checkDOTSyntax(t, out)
}

// checkDOTSyntax has Graphviz lay the graph out: an error or a warning
// fails the test.
func checkDOTSyntax(t *testing.T, graph []byte) {
	t.Helper()
	if problems := dotProblems(t, graph); problems != "" {
		t.Errorf("dot rejects the graph: %s", problems)
	}
}

// dotProblems is what Graphviz's dot says about graph, "" when nothing.
// Without dot the DOT output cannot be checked, which is a failure.
func dotProblems(t *testing.T, graph []byte) string {
	t.Helper()
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Fatal("Graphviz's dot is not installed, so the DOT output cannot be checked: install graphviz (apt-get install --no-install-recommends graphviz)")
	}
	cmd := exec.Command(dot, "-Tsvg", "-o", os.DevNull)
	cmd.Stdin = bytes.NewReader(graph)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%v: %s", err, out)
	}
	return string(out)
}

// The check must be able to fail: errors and warnings both count.
func TestDOTSyntaxCheckRejectsBrokenGraphs(t *testing.T) {
	for name, graph := range map[string]string{
		"unclosed graph":                       `graph mesh { "a" -- "b";`,
		"unterminated string":                  `graph mesh { "a -- b; }`,
		"directed edge in an undirected graph": `graph mesh { "a" -> "b"; }`,
		"warning only":                         `graph mesh { "a" [shape=bogus]; }`,
	} {
		t.Run(name, func(t *testing.T) {
			if dotProblems(t, []byte(graph)) == "" {
				t.Errorf("dot accepts %s", graph)
			}
		})
	}
	if problems := dotProblems(t, []byte(`graph mesh { "a" -- "b"; }`)); problems != "" {
		t.Errorf("dot rejects a valid graph: %s", problems)
	}
}

func TestRenderRelay(t *testing.T) {
	in := natInput(t)
	p := mustCompute(t, in)
	golden(t, "relay.dot", RenderDOT(p))
	golden(t, "wireguard-us-relayed.conf", RenderWireGuard(p, "us"))
	in.Spec.Clusters = slices.DeleteFunc(in.Spec.Clusters, func(c meshv1alpha1.ClusterEntry) bool { return c.Name == "eu" })
	delete(in.Clusters, "eu")
	none := mustCompute(t, in)
	if dot := string(RenderDOT(none)); !strings.Contains(dot, "no path: both behind NAT") {
		t.Errorf("the graph does not draw the missing path:\n%s", dot)
	}
}
