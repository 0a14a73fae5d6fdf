package corefile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEnableKubeadm: kubeadm's Corefile gets the zone, the option and the
// cache exceptions beside the cluster domain, and nothing else.
func TestEnableKubeadm(t *testing.T) {
	res, err := Enable(read(t, "kubeadm.Corefile"), Zone)
	if err != nil {
		t.Fatal(err)
	}
	if want := read(t, "kubeadm-enabled.Corefile"); res.Corefile != want {
		t.Errorf("enabled Corefile:\n%s\nwant:\n%s", res.Corefile, want)
	}
	want := Edits{Zone: Zone, ZoneArg: true, Multicluster: MulticlusterLine, CacheDisable: []string{"success", "denial"}}
	if !reflect.DeepEqual(res.Edits, want) {
		t.Errorf("edits %+v, want %+v", res.Edits, want)
	}
	if len(res.Notes) != 0 {
		t.Errorf("notes %q, want none", res.Notes)
	}
}

// TestRoundTrip: on every Corefile shape shipped or common, Enable gives a
// Corefile that is enabled, a second Enable changes nothing, and Disable
// gives back the original byte for byte.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		file  string
		edits Edits
		note  string
	}{
		{"kubeadm.Corefile", Edits{Zone: Zone, ZoneArg: true, Multicluster: MulticlusterLine, CacheDisable: []string{"success", "denial"}}, ""},
		{"k3s.Corefile", Edits{Zone: Zone, ZoneArg: true, Multicluster: MulticlusterLine}, "imports /etc/coredns/custom/*.override (line 20)"},
		{"eks.Corefile", Edits{Zone: Zone, ZoneArg: true, Multicluster: MulticlusterLine}, ""},
		{"tabs.Corefile", Edits{Zone: Zone, ZoneArg: true, Multicluster: MulticlusterLine}, ""},
		{"noblock.Corefile", Edits{Zone: Zone, ZoneArg: true, Multicluster: MulticlusterBlock}, ""},
		{"stubdomain.Corefile", Edits{Zone: Zone, ZoneArg: true, Multicluster: MulticlusterLine}, ""},
		{"kubeadm-enabled.Corefile", Edits{Zone: Zone}, ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			src := read(t, tc.file)
			res, err := Enable(src, Zone)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Edits, tc.edits) {
				t.Errorf("edits %+v, want %+v", res.Edits, tc.edits)
			}
			if tc.note != "" && !strings.Contains(strings.Join(res.Notes, "\n"), tc.note) {
				t.Errorf("notes %q lack %q", res.Notes, tc.note)
			}
			if on, err := Enabled(res.Corefile, Zone); err != nil || !on {
				t.Errorf("not enabled after Enable (%v):\n%s", err, res.Corefile)
			}
			again, err := Enable(res.Corefile, Zone)
			if err != nil || !again.Edits.Empty() || again.Corefile != res.Corefile {
				t.Errorf("a second Enable changed %+v (%v)", again.Edits, err)
			}
			back, err := Disable(res.Corefile, res.Edits)
			if err != nil {
				t.Fatal(err)
			}
			if back != src {
				t.Errorf("Disable did not restore the original:\n%s\nwant:\n%s", back, src)
			}
			if !res.Edits.Empty() {
				if on, _ := Enabled(back, Zone); on {
					t.Errorf("still enabled after Disable")
				}
			}
		})
	}
}

// TestEnableDetails: where the new lines go in shapes without neighbours
// to copy from.
func TestEnableDetails(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"a plugin without a block gets one", "read(noblock)", ".:5353 {\n    kubernetes cluster.local clusterset.local {\n        multicluster clusterset.local\n    }\n    forward . /etc/resolv.conf\n}\n"},
		{"an empty block", ".:53 {\n  kubernetes cluster.local {\n  }\n}\n", ".:53 {\n  kubernetes cluster.local clusterset.local {\n      multicluster clusterset.local\n  }\n}\n"},
		{"tabs, and a comment after the brace", "read(tabs)", "# tabs, a custom domain, a comment on the plugin line\n.:53 {\n\terrors\n\tkubernetes corp.internal in-addr.arpa ip6.arpa clusterset.local { # the cluster\n\t\tpods verified\n\t\tmulticluster clusterset.local\n\t}\n\tforward . 10.0.0.2\n}\n"},
		{"the zone is there, the option is not", ".:53 {\n kubernetes cluster.local clusterset.local {\n  pods insecure\n }\n}\n", ".:53 {\n kubernetes cluster.local clusterset.local {\n  pods insecure\n  multicluster clusterset.local\n }\n}\n"},
		{"a cache that disables everything needs nothing", ".:53 {\n kubernetes cluster.local {\n }\n cache {\n  disable success\n }\n}\n", ".:53 {\n kubernetes cluster.local clusterset.local {\n     multicluster clusterset.local\n }\n cache {\n  disable success\n }\n}\n"},
		{"dns:// keys and a zone with a final dot", "dns://.:53 {\n kubernetes cluster.local. {\n  pods insecure\n }\n}\n", "dns://.:53 {\n kubernetes cluster.local. clusterset.local {\n  pods insecure\n  multicluster clusterset.local\n }\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			if name, ok := strings.CutPrefix(src, "read("); ok {
				src = read(t, strings.TrimSuffix(name, ")")+".Corefile")
			}
			res, err := Enable(src, Zone)
			if err != nil {
				t.Fatal(err)
			}
			if res.Corefile != tc.want {
				t.Errorf("got:\n%q\nwant:\n%q", res.Corefile, tc.want)
			}
			if back, err := Disable(res.Corefile, res.Edits); err != nil || back != src {
				t.Errorf("Disable (%v):\n%q\nwant:\n%q", err, back, src)
			}
		})
	}
}

// TestNotUnderstood: what Enable refuses to edit, with the reason it gives.
func TestNotUnderstood(t *testing.T) {
	for _, tc := range []struct {
		name, src, reason string
	}{
		{"no kubernetes plugin", ".:53 {\n forward . 10.0.0.2\n}\n", "no server block has a kubernetes plugin"},
		{"two kubernetes plugins", ".:53 {\n kubernetes cluster.local\n}\n.:5353 {\n kubernetes cluster.local\n}\n", "2 server blocks have a kubernetes plugin (lines 1 and 4)"},
		{"a server block that does not get the zone", "cluster.local:53 {\n kubernetes cluster.local\n}\n.:53 {\n forward . 10.0.0.2\n}\n", "(line 1, cluster.local:53) does not receive queries for clusterset.local"},
		{"another block serves the zone", ".:53 {\n kubernetes cluster.local\n}\nclusterset.local:53 {\n multicluster clusterset.local\n}\n", "the server block clusterset.local:53 (line 4) already serves clusterset.local"},
		{"another block serves the zone on the default port", ".:53 {\n kubernetes cluster.local\n}\nclusterset.local {\n forward . 10.0.0.9\n}\n", "the server block clusterset.local (line 4) already serves clusterset.local"},
		{"a plugin without zones", ".:53 {\n kubernetes {\n  pods insecure\n }\n}\n", "names no zones"},
		{"a snippet", "(k8s) {\n kubernetes cluster.local\n}\n.:53 {\n import k8s\n}\n", "in the snippet (k8s) (line 2)"},
		{"a block without braces", ".:53\nkubernetes cluster.local\n", "server block .:53 has no braces"},
		{"an unclosed block", ".:53 {\n kubernetes cluster.local {\n}\n", "not closed"},
		{"an unclosed quote", ".:53 {\n kubernetes \"cluster.local\n}\n", "quote not closed"},
		{"quoted zones", ".:53 {\n kubernetes \"cluster.local\" {\n }\n}\n", "use quotes or placeholders"},
		{"placeholder zones", ".:53 {\n kubernetes {$DOMAIN} {\n }\n}\n", "use quotes or placeholders"},
		{"an import in the plugin's block", ".:53 {\n kubernetes cluster.local {\n  import /etc/k8s.conf\n }\n}\n", "imports /etc/k8s.conf (line 3)"},
		{"multicluster for other zones", ".:53 {\n kubernetes cluster.local other.local {\n  multicluster other.local\n }\n}\n", "multicluster option (line 3) names other zones"},
		{"text after a brace", ".:53 {\n kubernetes cluster.local { pods insecure\n }\n}\n", "text after {"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Enable(tc.src, Zone)
			var nu *NotUnderstood
			if !errors.As(err, &nu) || !strings.Contains(nu.Reason, tc.reason) {
				t.Errorf("Enable: %v, want NotUnderstood with %q", err, tc.reason)
			}
		})
	}
}

// TestDisableKeepsOtherEdits: what a user changed after enable stays;
// only the recorded edits leave, and those already gone are skipped.
func TestDisableKeepsOtherEdits(t *testing.T) {
	res, err := Enable(read(t, "kubeadm.Corefile"), Zone)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(res.Corefile, "       ttl 30\n", "       ttl 10\n", 1)
	edited = strings.Replace(edited, "    loadbalance\n", "    loadbalance\n    log\n", 1)
	edited = strings.Replace(edited, "       disable denial cluster.local clusterset.local\n", "       disable denial cluster.local\n", 1)
	got, err := Disable(edited, res.Edits)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(read(t, "kubeadm.Corefile"), "       ttl 30\n", "       ttl 10\n", 1)
	want = strings.Replace(want, "    loadbalance\n", "    loadbalance\n    log\n", 1)
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// A multicluster option the user had before enable is theirs.
	own := ".:53 {\n kubernetes cluster.local {\n  multicluster clusterset.local\n }\n}\n"
	res, err = Enable(own, Zone)
	if err != nil || res.Edits.Multicluster != "" || !res.Edits.ZoneArg {
		t.Fatalf("Enable of a Corefile with the option: %+v, %v", res.Edits, err)
	}
	if back, err := Disable(res.Corefile, res.Edits); err != nil || back != own {
		t.Errorf("Disable removed the user's option (%v):\n%s", err, back)
	}
}

// TestCacheNote: a cache that keeps the zone's answers past the
// conformance bound is named; one within it is not.
func TestCacheNote(t *testing.T) {
	res, err := Enable(".:53 {\n kubernetes cluster.local {\n  ttl 30\n }\n cache 30\n}\n", Zone)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "keeps answers of clusterset.local up to 30 s") {
		t.Errorf("notes %q", res.Notes)
	}
	res, err = Enable(read(t, "eks.Corefile"), Zone)
	if err != nil || len(res.Notes) != 0 {
		t.Errorf("the default ttl of 5 s is within the bound: notes %q (%v)", res.Notes, err)
	}
}

// FuzzRoundTrip: whatever Corefile Enable accepts, it leaves enabled and
// Disable gives back byte for byte (go test -fuzz FuzzRoundTrip).
func FuzzRoundTrip(f *testing.F) {
	for _, name := range []string{"kubeadm", "k3s", "eks", "tabs", "noblock", "stubdomain"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".Corefile"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, src string) {
		res, err := Enable(src, Zone)
		if err != nil {
			return
		}
		if on, err := Enabled(res.Corefile, Zone); err != nil || !on {
			t.Fatalf("not enabled (%v):\n%q\nfrom:\n%q", err, res.Corefile, src)
		}
		back, err := Disable(res.Corefile, res.Edits)
		if err != nil || back != src {
			t.Fatalf("Disable (%v):\n%q\nwant:\n%q", err, back, src)
		}
	})
}

func TestReloads(t *testing.T) {
	if !Reloads(read(t, "kubeadm.Corefile"), Zone) || Reloads(read(t, "tabs.Corefile"), Zone) {
		t.Errorf("kubeadm's Corefile reloads, tabs.Corefile does not")
	}
}
