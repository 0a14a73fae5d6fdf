package planner

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestNodeDecisions covers every skip reason: each case changes the
// fixtures and names the node whose decision it checks.
func TestNodeDecisions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutate   func(t *testing.T, in *Input)
		cluster  string
		node     string
		included bool
		reason   string
		group    string
		role     meshv1alpha1.NodeRole
		message  string
	}{
		{name: "leader of a location", cluster: "eu", node: "fra-1", included: true, reason: ReasonAdvertised, group: "location:fra", role: meshv1alpha1.NodeRoleLeader},
		{name: "member of a location", cluster: "eu", node: "fra-2", included: true, reason: ReasonAdvertised, group: "location:fra", role: meshv1alpha1.NodeRoleMember, message: "led by fra-1"},
		{name: "no internal IP: its own group", cluster: "eu", node: "edge-1", included: true, reason: ReasonAdvertised, group: "node:edge-1", role: meshv1alpha1.NodeRoleLeader},
		{name: "full granularity: its own group", cluster: "us", node: "us-2", included: true, reason: ReasonAdvertised, group: "node:us-2", role: meshv1alpha1.NodeRoleLeader},
		{name: "kg silent", cluster: "eu", node: "fra-3", reason: ReasonNotReady, message: "1h40m0s ago"},
		{name: "kg never ran", cluster: "eu", node: "new-1", reason: ReasonNoPublicKey},
		{name: "pod CIDR outside podCIDRs: skipped, still in its Kilo group", cluster: "eu", node: "rogue-1", reason: ReasonPodCIDROutsideDeclared, group: "location:ams", role: meshv1alpha1.NodeRoleMember},
		{
			name: "invalid key", cluster: "us", node: "us-1", reason: ReasonInvalidPublicKey,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-1"), kilov1alpha1.AnnotationKey, "aGVsbG8=")
			},
		},
		{
			name: "no pod CIDR", cluster: "us", node: "us-1", reason: ReasonNoPodCIDR,
			mutate: func(t *testing.T, in *Input) { node(t, *in, "us", "us-1").Spec.PodCIDR = "" },
		},
		{
			name: "no Kilo endpoint", cluster: "us", node: "us-1", reason: ReasonNoEndpoint,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-1"), kilov1alpha1.AnnotationEndpoint, "<delete>")
			},
		},
		{
			name: "leader's pod CIDR outside podCIDRs: it still leads", cluster: "eu", node: "ams-2", reason: ReasonPodCIDROutsideDeclared,
			group: "location:ams", role: meshv1alpha1.NodeRoleLeader, message: "still leads location:ams",
			mutate: func(t *testing.T, in *Input) { node(t, *in, "eu", "ams-2").Spec.PodCIDR = "10.99.5.0/24" },
		},
		{
			name: "two nodes with one pod CIDR", cluster: "eu", node: "ams-1", reason: ReasonDuplicatePodCIDR, group: "location:ams", role: meshv1alpha1.NodeRoleMember,
			mutate: func(t *testing.T, in *Input) { node(t, *in, "eu", "ams-1").Spec.PodCIDR = "10.10.1.0/24" },
		},
		{
			name: "malformed clustermesh-endpoint on the leader stops the group", cluster: "eu", node: "fra-2", reason: ReasonMalformedEndpoint, group: "location:fra", role: meshv1alpha1.NodeRoleMember,
			message: "group location:fra is not exported",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "fra-1"), kilov1alpha1.AnnotationClusterMeshEndpoint, "fra.example.com")
			},
		},
		{
			name: "malformed force-endpoint is not skipped over", cluster: "us", node: "us-1", reason: ReasonMalformedEndpoint, group: "node:us-1", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-1"), kilov1alpha1.AnnotationForceEndpoint, "0.0.0.0:51820")
			},
		},
		{
			name: "malformed ExternalIP is not skipped over", cluster: "us", node: "us-3", reason: ReasonMalformedEndpoint,
			group: "node:us-3", role: meshv1alpha1.NodeRoleLeader, message: "ExternalIP",
			mutate: func(t *testing.T, in *Input) {
				n := node(t, *in, "us", "us-3")
				n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "54.0.0.13.1"})
			},
		},
		{
			name: "roaming without keepalive", cluster: "us", node: "us-3", reason: ReasonNoEndpointNoKeepalive, group: "node:us-3", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-3"), kilov1alpha1.AnnotationClusterMeshEndpoint, "-")
			},
		},
		{
			name: "roaming with the leader's keepalive", cluster: "us", node: "us-3", included: true, reason: ReasonAdvertised, group: "node:us-3", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-3"), kilov1alpha1.AnnotationClusterMeshEndpoint, "-", kilov1alpha1.AnnotationPersistentKeepalive, "20")
			},
		},
		{
			name: "leader's wireguard-ip outside wireguardCIDR", cluster: "eu", node: "ams-1", reason: ReasonWireGuardIPOutsideCIDR, group: "location:ams", role: meshv1alpha1.NodeRoleMember,
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "ams-2"), kilov1alpha1.AnnotationWireGuardIP, "10.4.0.1/16")
			},
		},
		{
			name: "wireguardCIDR too small", cluster: "eu", node: "edge-1", reason: ReasonWireGuardCIDRExhausted, group: "node:edge-1", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) {
				entry(in, "eu").WireguardCIDR = "10.14.0.0/31"
				annotate(node(t, *in, "eu", "fra-1"), kilov1alpha1.AnnotationWireGuardIP, "<delete>")
				annotate(node(t, *in, "eu", "edge-1"), kilov1alpha1.AnnotationWireGuardIP, "<delete>")
			},
		},
		{
			name: "wireguardCIDR malformed", cluster: "us", node: "us-1", reason: ReasonInvalidWireGuardCIDR, group: "node:us-1", role: meshv1alpha1.NodeRoleLeader,
			mutate: func(t *testing.T, in *Input) { entry(in, "us").WireguardCIDR = "10.24.0.0" },
		},
		{
			name: "two clusters claiming one pod CIDR", cluster: "us", node: "us-1", reason: ReasonCIDRClaimedTwice, group: "node:us-1", role: meshv1alpha1.NodeRoleLeader,
			message: "pod CIDR of node fra-1",
			mutate: func(t *testing.T, in *Input) {
				entry(in, "us").PodCIDRs = []string{"10.20.0.0/16", "10.10.1.0/24"}
				node(t, *in, "us", "us-1").Spec.PodCIDR = "10.10.1.0/24"
			},
		},
		{
			name: "a Node the member caches keep only the name of", cluster: "us", node: "us-2", reason: ReasonNodeTooLarge,
			message: "weigh 130 KiB",
			mutate: func(t *testing.T, in *Input) {
				n := node(t, *in, "us", "us-2")
				n.Labels, n.Spec = nil, corev1.NodeSpec{}
				n.Annotations = map[string]string{meshv1alpha1.AnnotationNodeTooLarge: "the Node's labels weigh 130 KiB"}
			},
		},
		{
			name: "duplicate node names", cluster: "us", node: "us-2", reason: ReasonDuplicateNode,
			mutate: func(t *testing.T, in *Input) {
				snap := in.Clusters["us"]
				dup := node(t, *in, "us", "us-2").DeepCopy()
				snap.Nodes = nodesOf(append(snap.Nodes.Slice(), dup)...) // With would replace it
				in.Clusters["us"] = snap
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			if tc.mutate != nil {
				tc.mutate(t, &in)
			}
			p := mustCompute(t, in)
			d := decision(t, p, tc.cluster, tc.node)
			if d.Included != tc.included || d.Reason != tc.reason || d.Group != tc.group || d.Role != tc.role {
				t.Fatalf("decision %+v; want included=%v reason=%s group=%q role=%q", d, tc.included, tc.reason, tc.group, tc.role)
			}
			if !strings.Contains(d.Message, tc.message) || d.Message == "" {
				t.Errorf("message %q does not contain %q", d.Message, tc.message)
			}
			checkPlanInvariants(t, in, p)
		})
	}
}

func TestSummaryCountsSkippedByReason(t *testing.T) {
	p := mustCompute(t, testInput(t))
	c, _ := p.Cluster("eu")
	s := c.Summary
	if s.Nodes != 8 || s.KiloReadyNodes != 6 || s.AdvertisedNodes != 5 || s.Groups != 3 || s.ReadyGroups != 3 {
		t.Errorf("summary %+v", s)
	}
	want := []meshv1alpha1.ReasonCount{{Reason: ReasonNoPublicKey, Count: 1}, {Reason: ReasonNotReady, Count: 1}, {Reason: ReasonPodCIDROutsideDeclared, Count: 1}}
	if !slices.Equal(s.SkippedByReason, want) {
		t.Errorf("skippedByReason %+v, want %+v", s.SkippedByReason, want)
	}
}
