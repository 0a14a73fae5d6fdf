package views

import (
	"bytes"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// relayPlan: east and north behind NAT, relayed via west; west and east direct.
func relayPlan() *meshv1alpha1.ClusterMeshPlan {
	p := testPlan()
	p.Clusters[0].BehindNAT, p.Clusters[2].BehindNAT = true, true
	p.Relay = &meshv1alpha1.RelayPlan{Cluster: "west", Basis: meshv1alpha1.RelayBasisChosen, Group: "location:eu", PeerName: "demo-west-eu-y",
		Message: "west is the first cluster by name that can relay every pair of clusters behind NAT"}
	p.Paths = []meshv1alpha1.PathPlan{{Clusters: []string{"east", "north"}, Kind: meshv1alpha1.PathRelayed, Via: "west", Reason: "BothBehindNAT",
		Message: "both are behind NAT; on each, Peer demo-west-eu-y (group location:eu of west) also carries the other's networks"}}
	return p
}

func TestRenderWhyPair(t *testing.T) {
	tests := []struct {
		name  string
		plan  func() *meshv1alpha1.ClusterMeshPlan
		a, b  string
		wants []string
		err   string
	}{
		{name: "relayed", plan: relayPlan, a: "north", b: "east",
			wants: []string{"east and north: relayed via west (BothBehindNAT)", "Peer demo-west-eu-y", "relay: west is the first cluster by name"}},
		{name: "one side behind NAT", plan: relayPlan, a: "east", b: "west",
			wants: []string{"east and west: direct (OneDialable)", "east is behind NAT and dials west; west holds the Peers of east without endpoint"}},
		{name: "both dialable", plan: testPlan, a: "east", b: "west", wants: []string{"east and west: direct (BothDialable)"}},
		{name: "no path", plan: func() *meshv1alpha1.ClusterMeshPlan {
			p := relayPlan()
			p.Relay = &meshv1alpha1.RelayPlan{Basis: meshv1alpha1.RelayBasisNone, Message: "no member cluster can relay",
				Refused: []meshv1alpha1.RelayRefusal{{Cluster: "west", Reason: "CannotCarry", Message: "west holds no Peer of north"}}}
			p.Paths[0] = meshv1alpha1.PathPlan{Clusters: []string{"east", "north"}, Kind: meshv1alpha1.PathNone, Reason: "NoRelay", Message: "both are behind NAT and no cluster relays between them"}
			return p
		}, a: "east", b: "north", wants: []string{"east and north: no path (NoRelay)", "west cannot relay: CannotCarry: west holds no Peer of north"}},
		{name: "not a member", plan: testPlan, a: "east", b: "south", err: `cluster "south" is not a member`},
		{name: "the same cluster", plan: testPlan, a: "east", b: "east", err: "two clusters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := RenderWhyPair(&out, tt.plan(), tt.a, tt.b)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.wants {
				if !strings.Contains(out.String(), w) {
					t.Errorf("missing %q in:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestRelayInPlanAndWhy(t *testing.T) {
	p := relayPlan()
	var out bytes.Buffer
	RenderPlan(&out, p)
	for _, w := range []string{"Relay west (Chosen), group location:eu, Peer demo-west-eu-y", "east <-> north: relayed via west (BothBehindNAT)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("plan misses %q:\n%s", w, out.String())
		}
	}
	out.Reset()
	p.Targets[1].DiffState = meshv1alpha1.DiffStateComputed // north answers now
	if err := RenderWhy(&out, p, "dup", "east"); err != nil {
		t.Fatal(err)
	}
	if want := "on north: not held: both clusters are behind NAT; relayed via west"; !strings.Contains(out.String(), want) {
		t.Errorf("why misses %q:\n%s", want, out.String())
	}
}
