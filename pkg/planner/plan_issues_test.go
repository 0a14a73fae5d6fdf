package planner

import (
	"strings"
	"testing"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func hasDecisionNote(d meshv1alpha1.NodeDecision, reason string) bool {
	for _, n := range d.Notes {
		if n.Reason == reason {
			return true
		}
	}
	return false
}

func TestNotes(t *testing.T) {
	in := testInput(t)
	annotate(node(t, in, "eu", "fra-2"), kilov1alpha1.AnnotationWireGuardIP, "10.14.0.9/16", kilov1alpha1.AnnotationClusterMeshEndpoint, "nope", kilov1alpha1.AnnotationPersistentKeepalive, "often")
	p := mustCompute(t, in)
	d := decision(t, p, "eu", "fra-2")
	for _, r := range []string{NoteStaleWireGuardIP, NoteMalformedEndpoint, NoteMalformedAnnotation} {
		if !hasDecisionNote(d, r) {
			t.Errorf("no %s note in %+v", r, d.Notes)
		}
	}
	if !d.Included {
		t.Error("notes must not skip the node")
	}
	if d := decision(t, p, "home", "home-2"); !hasDecisionNote(d, NoteInternalIPNotAdvertised) || !d.Included {
		t.Errorf("home-2: %+v", d)
	}
	if _, ok := findIssue(p.View.Warnings, WarningMalformedAnnotations); !ok {
		t.Error("no aggregated warning for malformed annotations")
	}
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(t *testing.T, in *Input)
		reason  string
		cluster string
		message string
	}{
		{name: "private endpoint", reason: WarningPrivateEndpoint, cluster: "us", message: "10.0.0.13:51820"},
		{name: "no nodeCIDRs", reason: WarningInternalIPsNotAdvert, cluster: "home", message: "(3)"},
		{
			name: "NATed cluster whose leader sends no keepalive", reason: WarningKeepaliveNotSent, cluster: "home", message: "home-1",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "home", "home-1"), kilov1alpha1.AnnotationPersistentKeepalive, "<delete>")
			},
		},
		{
			name: "roaming group whose leader sends no keepalive", reason: WarningKeepaliveNotSent, cluster: "us", message: "us-3",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-3"), kilov1alpha1.AnnotationClusterMeshEndpoint, "-")
				entry(in, "us").PersistentKeepalive = 10
			},
		},
		{
			name: "wireguard-ip lagging behind", reason: WarningWireGuardIPMismatch, cluster: "eu", message: "fra-1 has 10.14.0.7, computed 10.14.0.2",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "fra-1"), kilov1alpha1.AnnotationWireGuardIP, "10.14.0.7/16")
			},
		},
		{
			name: "granularity disagreement", reason: WarningGranularityDisagreement, cluster: "us", message: "full on 2",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-1"), kilov1alpha1.AnnotationGranularity, "location")
			},
		},
		{
			name: "unreachable cluster", reason: WarningClusterUnreachable, cluster: "us",
			mutate: func(t *testing.T, in *Input) { in.Clusters["us"] = ClusterSnapshot{Error: "dial tcp: i/o timeout"} },
		},
		{
			name: "snapshot of a cluster not in the mesh", reason: WarningUnknownCluster, cluster: "mars",
			mutate: func(t *testing.T, in *Input) { in.Clusters["mars"] = ClusterSnapshot{Reachable: true} },
		},
		{
			name: "extra networks with no group to carry them", reason: WarningExtraNetworksUnattached, cluster: "us",
			mutate: func(t *testing.T, in *Input) {
				for _, n := range in.Clusters["us"].Nodes.All() {
					annotate(n, kilov1alpha1.AnnotationLastSeen, "1")
				}
			},
		},
		{
			name: "all groups down", reason: WarningNoReadyGroups, cluster: "us",
			mutate: func(t *testing.T, in *Input) {
				for _, n := range in.Clusters["us"].Nodes.All() {
					annotate(n, kilov1alpha1.AnnotationLastSeen, "1")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			if tc.mutate != nil {
				tc.mutate(t, &in)
			}
			p := mustCompute(t, in)
			checkPlanInvariants(t, in, p)
			for _, w := range p.View.Warnings {
				if w.Reason == tc.reason && w.Cluster == tc.cluster && strings.Contains(w.Message, tc.message) {
					return
				}
			}
			t.Errorf("no %s warning for %s containing %q in %+v", tc.reason, tc.cluster, tc.message, p.View.Warnings)
		})
	}
}
