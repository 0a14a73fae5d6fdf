package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestUncarried(t *testing.T) {
	// foreignKeysOf puts on target a Peer this mesh does not manage with
	// the key of every group of source: kg keys peers by public key, so
	// none of source's groups may be planned there (PublicKeyInUse).
	foreignKeysOf := func(t *testing.T, in *Input, source, target string) {
		p := mustCompute(t, *in)
		for i, peer := range p.DesiredPeers[target].All() {
			if peer.Labels[LabelSourceCluster] == source {
				addPeer(in, target, foreignPeer(fmt.Sprintf("imported-%d", i), peer.Spec.PublicKey, fmt.Sprintf("10.250.%d.0/24", i)))
			}
		}
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, in *Input)
		local  string
		want   []Uncarried
	}{
		{name: "every group carried everywhere", mutate: func(*testing.T, *Input) {}},
		{
			name:   "every key of us in use on eu",
			mutate: func(t *testing.T, in *Input) { foreignKeysOf(t, in, "us", "eu") },
			want:   []Uncarried{{"us", "eu"}},
		},
		{
			name: "both ways between us and home",
			mutate: func(t *testing.T, in *Input) {
				foreignKeysOf(t, in, "us", "home")
				foreignKeysOf(t, in, "home", "us")
			},
			want: []Uncarried{{"home", "us"}, {"us", "home"}},
		},
		{
			name: "pod networks of us declared wrong",
			mutate: func(t *testing.T, in *Input) {
				in.Spec.Clusters[1].PodCIDRs = []string{"10.99.0.0/16"}
			},
			want: []Uncarried{{"us", "eu"}, {"us", "home"}},
		},
		{
			name: "an unreachable target is not judged",
			mutate: func(t *testing.T, in *Input) {
				foreignKeysOf(t, in, "us", "eu")
				in.Clusters["eu"] = ClusterSnapshot{Error: "connection refused"}
			},
		},
		{
			name: "a cluster without groups has nothing to carry",
			mutate: func(t *testing.T, in *Input) {
				snap := in.Clusters["home"]
				snap.Nodes = nodesOf()
				in.Clusters["home"] = snap
			},
		},
		{
			name: "while host access withholds, the local cluster is Granted's to tell",
			mutate: func(t *testing.T, in *Input) {
				foreignKeysOf(t, in, "us", "eu")
				foreignKeysOf(t, in, "us", "home")
				in.HostAccess = HostAccess{Mode: HostDenied, View: meshv1alpha1.HostAccessPlan{Granted: false, Basis: meshv1alpha1.HostAccessBasisNone, Reason: HostReasonNoGrant}}
			},
			local: "eu",
			want:  []Uncarried{{"us", "home"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			tt.mutate(t, &in)
			p := mustCompute(t, in)
			got := p.Uncarried(tt.local)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Uncarried = %v, want %v", got, tt.want)
			}
			checkCarried(t, p, tt.local)
		})
	}
}

// checkCarried requires Plan.Carried to count exactly what every target's
// desired Peers carry, and Uncarried to answer as it does from every Peer.
func checkCarried(t testing.TB, p *Plan, local string) {
	t.Helper()
	for target, list := range p.DesiredPeers {
		if want := CarriedOf(list); !maps.Equal(p.Carried[target], want) {
			t.Errorf("Carried[%s] = %v, counted from its Peers %v", target, p.Carried[target], want)
		}
	}
	if len(p.Carried) != len(p.DesiredPeers) {
		t.Errorf("Carried has %d targets, DesiredPeers %d", len(p.Carried), len(p.DesiredPeers))
	}
	if got, want := p.Uncarried(local), uncarriedFromPeers(p, local); !slices.Equal(got, want) {
		t.Errorf("Uncarried = %v, from every Peer %v", got, want)
	}
}

// uncarriedFromPeers is Uncarried as it was, reading every desired Peer of
// every target: the reference the counts must agree with.
func uncarriedFromPeers(p *Plan, local string) []Uncarried {
	return p.uncarried(local, func(t *meshv1alpha1.TargetPlan) func(string) bool {
		blockedKept := map[string]bool{}
		for _, k := range t.Kept {
			if k.Reason != KeptSourceUnreachable && k.Reason != KeptNoReadyGroups {
				blockedKept[k.Name] = true
			}
		}
		carried := map[string]bool{}
		for _, peer := range p.DesiredPeers[t.Cluster].All() {
			if !blockedKept[peer.Name] {
				carried[peer.Labels[LabelSourceCluster]] = true
				if r := peer.Annotations[AnnotationRelays]; r != "" {
					for _, s := range strings.Split(r, ",") {
						carried[s] = true
					}
				}
			}
		}
		return func(s string) bool { return carried[s] }
	})
}

// BenchmarkUncarried answers Uncarried for a full 3 x 5,000 mesh at rest
// (30,000 desired Peers), as the reconciler does on every pass: counts
// reads the plan's Carried, peers reads every desired Peer as before.
func BenchmarkUncarried(b *testing.B) {
	p, err := Compute(benchInput(3, 5000, "full"))
	if err != nil {
		b.Fatal(err)
	}
	for _, bb := range []struct {
		name      string
		uncarried func(*Plan, string) []Uncarried
	}{{"counts", (*Plan).Uncarried}, {"peers", uncarriedFromPeers}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if u := bb.uncarried(p, ""); len(u) > 0 {
					b.Fatalf("uncarried: %v", u)
				}
			}
		})
	}
}
