package planner

import (
	"fmt"
	"slices"
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
				snap.Nodes = nil
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
			got := mustCompute(t, in).Uncarried(tt.local)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Uncarried = %v, want %v", got, tt.want)
			}
		})
	}
}
