//go:build e2e

package plugin

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testOutputContract: one output contract for kubectl mesh. Every command
// that shows something prints JSON and YAML that parse with -o; the
// server's own error text reaches the user; a missing mesh is worded alike
// by every command; why completes node names.
func testOutputContract(t *testing.T, env *framework.Env, ns string) {
	shows := map[string][]string{
		"plan":          {"plan", "demo", "-n", ns},
		"peers":         {"peers", "demo", "-n", ns},
		"peers north":   {"peers", "demo", "-n", ns, "--cluster", "north"},
		"status":        {"status", "demo", "-n", ns},
		"why":           {"why", "demo", "n4-nokey", "-n", ns},
		"why of a peer": {"why", "demo", "dup", "--cluster", "north", "-n", ns},
		"version":       {"version"},
		"graph":         {"graph", "demo", "-n", ns},
	}
	for name, args := range shows {
		t.Run(name, func(t *testing.T) {
			for _, format := range []string{"json", "yaml"} {
				r := mustMesh(t, env, framework.UserAdmin, append(args, "-o", format)...)
				var v map[string]any
				var err error
				if format == "json" {
					err = json.Unmarshal([]byte(r.stdout), &v)
				} else {
					err = yaml.Unmarshal([]byte(r.stdout), &v)
				}
				if err != nil || len(v) == 0 {
					t.Errorf("-o %s does not parse as an object (%v):\n%s", format, err, r)
				}
			}
		})
	}
	t.Run("--format stays an alias of -o on peers", func(t *testing.T) {
		a := mustMesh(t, env, framework.UserAdmin, "peers", "demo", "-n", ns, "--cluster", "north", "--format", "wireguard")
		b := mustMesh(t, env, framework.UserAdmin, "peers", "demo", "-n", ns, "--cluster", "north", "-o", "wireguard")
		// The header names when the plan was made: a status write between the two calls replans.
		if plannedAt.ReplaceAllString(a.stdout, "") != plannedAt.ReplaceAllString(b.stdout, "") || !strings.Contains(a.stdout, "[Peer]") {
			t.Errorf("--format wireguard and -o wireguard differ:\n%s\n%s", a, b)
		}
	})
	t.Run("the server's error text passes through", func(t *testing.T) {
		for _, format := range []string{"yaml", "json", "wireguard"} {
			r := mesh(t, env, framework.UserAdmin, "peers", "demo", "-n", ns, "--cluster", "nowhere", "-o", format)
			if r.code != 1 || !strings.Contains(r.stderr, `cluster "nowhere" is not a member`) || strings.Contains(r.stderr, "unknown reason") {
				t.Errorf("peers --cluster nowhere -o %s: want exit 1 with the server's message, got %s", format, r)
			}
		}
	})
	t.Run("one not-found wording", func(t *testing.T) {
		want := "clustermesh " + ns + "/nomesh not found (is the namespace right? use -n)"
		for _, args := range [][]string{
			{"plan", "nomesh"}, {"peers", "nomesh"}, {"peers", "nomesh", "--cluster", "west"}, {"graph", "nomesh"},
			{"why", "nomesh", "w1"}, {"status", "nomesh"}, {"leave", "nomesh", "--name", "west"},
		} {
			r := mesh(t, env, framework.UserAdmin, append(args, "-n", ns)...)
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("%s: want exit 1 with %q, got %s", strings.Join(args, " "), want, r)
			}
		}
	})
	t.Run("why completes node names", func(t *testing.T) {
		out := env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "__complete", "mesh", "why", "demo", "-n", ns, "")
		for _, n := range []string{"dup", "n4-nokey", "w1", "e1"} {
			if !strings.Contains(out, n+"\n") {
				t.Errorf("completing a node lacks %s:\n%s", n, out)
			}
		}
		out = env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "__complete", "mesh", "why", "demo", "-n", ns, "--cluster", "north", "n")
		if !strings.Contains(out, "n1\n") || !strings.Contains(out, "n4-nokey\n") || strings.Contains(out, "w1\n") {
			t.Errorf("completing a node of north:\n%s", out)
		}
	})
}

// plannedAt matches the time in the header of the WireGuard output.
var plannedAt = regexp.MustCompile(`planned for [0-9TZ:-]+`)
