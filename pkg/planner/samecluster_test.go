package planner

import (
	"strings"
	"testing"
)

func TestSameClusters(t *testing.T) {
	tests := []struct {
		name       string
		identities map[string]string
		want       []string // clusters with a SameCluster conflict
		all        string   // the entries the message names
	}{
		{name: "unknown identities", identities: map[string]string{}},
		{name: "distinct", identities: map[string]string{"eu": "a", "us": "b", "home": "c"}},
		{name: "us listed twice as home", identities: map[string]string{"eu": "a", "us": "b", "home": "b"}, want: []string{"us"}, all: "home, us"},
		{name: "one cluster three times", identities: map[string]string{"eu": "a", "us": "a", "home": "a"}, want: []string{"home", "us"}, all: "eu, home, us"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			for name, id := range tt.identities {
				snap := in.Clusters[name]
				snap.Identity = id
				in.Clusters[name] = snap
			}
			var got []string
			for _, c := range mustCompute(t, in).View.Conflicts {
				if c.Reason != ConflictSameCluster {
					continue
				}
				got = append(got, c.Cluster)
				if !strings.Contains(c.Message, "entries "+tt.all+" reach the same cluster") {
					t.Errorf("message %q does not name %s", c.Message, tt.all)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("SameCluster on %v, want %v", got, tt.want)
			}
		})
	}
}
