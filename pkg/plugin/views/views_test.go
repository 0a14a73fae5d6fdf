package views

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// testPlan has node "dup" in two clusters, a skipped node, and a group
// withheld on one target by a conflict.
func testPlan() *meshv1alpha1.ClusterMeshPlan {
	return &meshv1alpha1.ClusterMeshPlan{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
		Clusters: []meshv1alpha1.ClusterPlan{
			{
				Name: "east", Reachable: true, Granularity: meshv1alpha1.GranularityLocation, GranularitySource: meshv1alpha1.GranularitySourceSpec,
				Groups: []meshv1alpha1.GroupPlan{{Name: "location:home", Leader: "dup", Members: []string{"dup"}, Ready: true, PeerName: "demo-east-home-x", Endpoint: "198.51.100.1:51820", WireguardIP: "10.4.0.1"}},
				Nodes:  []meshv1alpha1.NodeDecision{{Node: "dup", Included: true, Group: "location:home", Role: meshv1alpha1.NodeRoleLeader, Reason: "Advertised"}},
			},
			{
				Name: "west", Reachable: true, Granularity: meshv1alpha1.GranularityLocation,
				Groups: []meshv1alpha1.GroupPlan{{Name: "location:eu", Leader: "w1", Members: []string{"dup", "w1"}, Ready: true, PeerName: "demo-west-eu-y"}},
				Nodes: []meshv1alpha1.NodeDecision{
					{Node: "dup", Included: true, Group: "location:eu", Role: meshv1alpha1.NodeRoleMember, Reason: "Advertised"},
					{Node: "nokey", Reason: "NoPublicKey", Message: "kilo.squat.ai/key is missing"},
					{Node: "w1", Included: true, Group: "location:eu", Role: meshv1alpha1.NodeRoleLeader, Reason: "Advertised"},
				},
			},
			{Name: "north", Reachable: false, Error: "connection refused"},
		},
		Targets: []meshv1alpha1.TargetPlan{
			{Cluster: "east", DiffState: meshv1alpha1.DiffStateComputed, DesiredPeers: 0},
			{Cluster: "north", DiffState: meshv1alpha1.DiffStateUnknown, DesiredPeers: 1},
			{Cluster: "west", DiffState: meshv1alpha1.DiffStateComputed, DesiredPeers: 3, Create: []string{"demo-east-home-x", "demo-of-no-group"}, Unchanged: []string{"u1"}},
		},
		Conflicts: []meshv1alpha1.PlanIssue{{Reason: "PublicKeyInUse", Cluster: "west", Target: "east", Message: "groups whose leader's key is in use: group location:eu (leader key K)"}},
	}
}

func TestRenderWhy(t *testing.T) {
	p := testPlan()
	var out bytes.Buffer
	err := RenderWhy(&out, p, "dup", "")
	if err == nil || !strings.Contains(err.Error(), "ambiguous") || !strings.Contains(err.Error(), "east, west") || !strings.Contains(err.Error(), "--cluster") {
		t.Errorf("a name of two clusters: want an error naming both and --cluster, got %v", err)
	}

	out.Reset()
	if err := RenderWhy(&out, p, "dup", "west"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Node dup of cluster west: advertised (Advertised)", "this node is its member; leader w1",
		"on east: not planned: PublicKeyInUse", "on north: unknown: the cluster is unreachable"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("why dup --cluster west lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := RenderWhy(&out, p, "dup", "east"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "on west: to be created") {
		t.Errorf("why dup --cluster east:\n%s", out.String())
	}

	out.Reset()
	if err := RenderWhy(&out, p, "nokey", ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Node nokey of cluster west: skipped (NoPublicKey)") || !strings.Contains(out.String(), "Kilo itself does not count the node") {
		t.Errorf("why nokey:\n%s", out.String())
	}

	if err := RenderWhy(&out, p, "n1", ""); err == nil || !strings.Contains(err.Error(), "unreachable, so unknown: north") {
		t.Errorf("a node of no reachable cluster: want the unreachable clusters named, got %v", err)
	}
	if err := RenderWhy(&out, p, "n1", "south"); err == nil || !strings.Contains(err.Error(), "not a member") {
		t.Errorf("an unknown cluster: got %v", err)
	}
}

func TestRenderPlan(t *testing.T) {
	var out bytes.Buffer
	RenderPlan(&out, testPlan())
	for _, want := range []string{
		"west: granularity Location",
		"skipped nokey: NoPublicKey: kilo.squat.ai/key is missing",
		"+ demo-east-home-x",
		"from east location:home",
		"north: unreachable: connection refused",
		"Peers on north: unknown while it is unreachable",
		"PublicKeyInUse [west -> east]",
		"= 1 unchanged",
		"2 to create, 0 to update, 0 to delete; 1 cluster(s) unreachable",
		"1 conflict(s) keep groups or Peers out of the mesh (listed above).",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.TrimRight(line, " ") != line {
			t.Errorf("trailing blanks in %q", line)
		}
	}
}

// TestRenderPlanSummary: "No changes" only above a plan that keeps nothing out.
func TestRenderPlanSummary(t *testing.T) {
	settled := func(conflicts ...meshv1alpha1.PlanIssue) *meshv1alpha1.ClusterMeshPlan {
		return &meshv1alpha1.ClusterMeshPlan{
			Clusters:  []meshv1alpha1.ClusterPlan{{Name: "east", Reachable: true}, {Name: "west", Reachable: true}},
			Targets:   []meshv1alpha1.TargetPlan{{Cluster: "east", DiffState: meshv1alpha1.DiffStateComputed}, {Cluster: "west", DiffState: meshv1alpha1.DiffStateComputed}},
			Conflicts: conflicts,
		}
	}
	blocked := meshv1alpha1.PlanIssue{Reason: "PublicKeyInUse", Cluster: "west", Target: "east", Message: "groups whose leader's key is in use"}
	tests := []struct {
		name    string
		plan    *meshv1alpha1.ClusterMeshPlan
		want    string
		notWant string
	}{
		{name: "settled", plan: settled(), want: "No changes: every member cluster holds the Peers the plan wants."},
		{name: "settled but blocked", plan: settled(blocked, blocked),
			want: "0 to create, 0 to update, 0 to delete; 2 conflict(s) keep groups or Peers out of the mesh (listed above).", notWant: "No changes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			RenderPlan(&out, tt.plan)
			if !strings.Contains(out.String(), tt.want) || tt.notWant != "" && strings.Contains(out.String(), tt.notWant) {
				t.Errorf("want %q and not %q in:\n%s", tt.want, tt.notWant, out.String())
			}
		})
	}
}

func TestReady(t *testing.T) {
	ready := metav1.Condition{Type: meshv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2}
	m := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	m.Status = meshv1alpha1.ClusterMeshStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{ready}}
	if !Ready(m) {
		t.Errorf("Ready=True of the current generation is Ready")
	}
	m.Generation = 3 // a cluster just joined: the old Ready says nothing
	if Ready(m) {
		t.Errorf("a status of an older generation counts as Ready")
	}
	if !strings.Contains(Progress(m), "generation 3 not observed yet") {
		t.Errorf("progress %q", Progress(m))
	}
}

// TestRenderStatus: every condition the server reports has a row, in the
// API's order whatever the stored order, Unknown while the server has not
// written it; conditions this client does not know follow.
func TestRenderStatus(t *testing.T) {
	m := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"}}
	m.Status.Conditions = []metav1.Condition{
		{Type: "FromALaterServer", Status: metav1.ConditionTrue, Reason: "Later"},
		{Type: meshv1alpha1.ConditionGranted, Status: metav1.ConditionFalse, Reason: "NotGranted"},
		{Type: meshv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "NotReady"},
	}
	m.Status.DepartedClusters = []meshv1alpha1.DepartedCluster{{Name: "west", Server: "https://west:443", Reason: meshv1alpha1.DepartureUnreachable, Message: "delete them\nby hand"}}
	var out bytes.Buffer
	RenderStatus(&out, m)
	if !regexp.MustCompile(`(?m)^DEPARTED +SERVER +REASON +SINCE +MESSAGE\nwest +https://west:443 +Unreachable +\S+ +delete them by hand$`).MatchString(out.String()) {
		t.Errorf("the departed cluster is not shown as a row:\n%s", out.String())
	}
	var rows []string
	for _, line := range strings.Split(out.String(), "\n")[3:] {
		if line == "" {
			break
		}
		f := strings.Fields(line)
		rows = append(rows, strings.Join(f[:min(3, len(f))], " "))
	}
	want := []string{"Ready False NotReady", "ClustersReachable Unknown", "PeersApplied Unknown", "PeersCarried Unknown", "NetworksValid Unknown",
		"CredentialsValid Unknown", "Granted False NotGranted", "DeparturesComplete Unknown", "ServicesExclusive Unknown", "FromALaterServer True Later"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("condition rows:\n%s\nwant:\n%s\nin:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"), out.String())
	}
}

func TestWhyData(t *testing.T) {
	tests := []struct {
		name, node, cluster string
		want                whyData
		err                 string
	}{
		{name: "ambiguous", node: "dup", err: "ambiguous"},
		{name: "skipped", node: "nokey", want: whyData{Cluster: "west", Decision: testPlan().Clusters[1].Nodes[1]}},
		{
			name: "member of an exported group", node: "dup", cluster: "west",
			want: whyData{Cluster: "west", Decision: testPlan().Clusters[1].Nodes[0], Group: &testPlan().Clusters[1].Groups[0],
				Peers: []peerFateData{
					{Cluster: "east", Fate: "not planned: PublicKeyInUse: groups whose leader's key is in use: group location:eu (leader key K)"},
					{Cluster: "north", Fate: "unknown: the cluster is unreachable"},
				}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WhyData(testPlan(), tt.node, tt.cluster)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("want an error with %q, got %v", tt.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("WhyData:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestNodeNames(t *testing.T) {
	tests := []struct {
		cluster, prefix string
		want            []string
	}{
		{"", "", []string{"dup", "nokey", "w1"}},
		{"", "n", []string{"nokey"}},
		{"east", "", []string{"dup"}},
		{"north", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.cluster+"/"+tt.prefix, func(t *testing.T) {
			if got := nodeNames(testPlan(), tt.cluster, tt.prefix); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("nodeNames = %v, want %v", got, tt.want)
			}
		})
	}
}
