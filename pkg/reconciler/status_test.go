package reconciler

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

func testMesh() *meshv1alpha1.ClusterMesh {
	return &meshv1alpha1.ClusterMesh{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Generation: 3},
		Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
			{Name: "us"}, {Name: "eu", Local: true},
		}},
	}
}

// testPlan is a plan over eu and us, each carrying the other's two groups;
// unreachable clusters have no figures.
func testPlan(unreachable ...string) *planner.Plan {
	p := &planner.Plan{DesiredPeers: map[string]planner.PeerList{}}
	for _, name := range []string{"eu", "us"} {
		other := map[string]string{"eu": "us", "us": "eu"}[name]
		var peers []*kilov1alpha1.Peer
		for _, g := range []string{"a", "b"} {
			peers = append(peers, &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{
				Name: other + "-" + g, Labels: map[string]string{planner.LabelSourceCluster: other}}})
		}
		p.DesiredPeers[name] = planner.PeerListOf(peers...)
		cp := meshv1alpha1.ClusterPlan{Name: name, Reachable: true, Granularity: meshv1alpha1.GranularityLocation,
			Summary: meshv1alpha1.ClusterPlanSummary{Nodes: 5, KiloReadyNodes: 4, AdvertisedNodes: 3, Groups: 2, ReadyGroups: 2,
				SkippedByReason: []meshv1alpha1.ReasonCount{{Reason: planner.ReasonNoPodCIDR, Count: 1}, {Reason: planner.ReasonNotReady, Count: 1}}}}
		tp := meshv1alpha1.TargetPlan{Cluster: name, DiffState: meshv1alpha1.DiffStateComputed, DesiredPeers: 2}
		for _, u := range unreachable {
			if u == name {
				cp = meshv1alpha1.ClusterPlan{Name: name, Error: "connection refused"}
				tp = meshv1alpha1.TargetPlan{Cluster: name, DiffState: meshv1alpha1.DiffStateUnknown, DesiredPeers: 2}
			}
		}
		p.View.Clusters = append(p.View.Clusters, cp)
		p.View.Targets = append(p.View.Targets, tp)
	}
	return counted(p)
}

// counted sets what a plan's desired Peers carry, as Compute does, after a
// test built or edited them.
func counted(p *planner.Plan) *planner.Plan {
	p.Carried = map[string]map[string]int{}
	for target, peers := range p.DesiredPeers {
		p.Carried[target] = planner.CarriedOf(peers)
	}
	return p
}

func allApplied() map[string]targetOutcome {
	return map[string]targetOutcome{"eu": {reconciled: true, applied: 2}, "us": {reconciled: true, applied: 2}}
}

func condition(t *testing.T, st meshv1alpha1.ClusterMeshStatus, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, st.Conditions)
	}
	return *c
}

func wantCondition(t *testing.T, st meshv1alpha1.ClusterMeshStatus, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	c := condition(t, st, typ)
	if c.Status != status || c.Reason != reason {
		t.Errorf("%s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return c
}

func TestBuildStatusAllApplied(t *testing.T) {
	mesh := testMesh()
	st := buildStatus(statusInput{mesh: mesh, plan: testPlan(), outcomes: allApplied(), now: t0})

	if st.ObservedGeneration != 3 {
		t.Errorf("observedGeneration = %d, want 3", st.ObservedGeneration)
	}
	for _, typ := range []string{meshv1alpha1.ConditionReady, meshv1alpha1.ConditionClustersReachable,
		meshv1alpha1.ConditionPeersApplied, meshv1alpha1.ConditionNetworksValid} {
		c := condition(t, st, typ)
		if c.Status != metav1.ConditionTrue || c.ObservedGeneration != 3 || !c.LastTransitionTime.Equal(&t0) {
			t.Errorf("%s = %+v, want True at generation 3 since t0", typ, c)
		}
	}
	if len(st.Clusters) != 2 || st.Clusters[0].Name != "eu" || st.Clusters[1].Name != "us" {
		t.Fatalf("clusters not sorted by name: %+v", st.Clusters)
	}
	want := meshv1alpha1.ClusterStatus{Name: "eu", Reachable: true, Granularity: meshv1alpha1.GranularityLocation,
		Nodes: 5, ReadyNodes: 4, Locations: 2, PeersDesired: 2, PeersApplied: 2, SkippedNodes: 2,
		SkippedByReason: []meshv1alpha1.ReasonCount{{Reason: planner.ReasonNoPodCIDR, Count: 1}, {Reason: planner.ReasonNotReady, Count: 1}}}
	if got := st.Clusters[0]; !equalClusterStatus(got, want) {
		t.Errorf("eu = %+v, want %+v", got, want)
	}
}

func equalClusterStatus(a, b meshv1alpha1.ClusterStatus) bool {
	x := meshv1alpha1.ClusterMeshStatus{Clusters: []meshv1alpha1.ClusterStatus{a}}
	y := meshv1alpha1.ClusterMeshStatus{Clusters: []meshv1alpha1.ClusterStatus{b}}
	return !statusChanged(&x, &y)
}

func TestBuildStatusUnreachableKeepsLastFigures(t *testing.T) {
	mesh := testMesh()
	mesh.Status = buildStatus(statusInput{mesh: mesh, plan: testPlan(), outcomes: allApplied(), now: t0})

	outcomes := map[string]targetOutcome{"eu": {reconciled: true, applied: 2}}
	st := buildStatus(statusInput{mesh: mesh, plan: testPlan("us"), outcomes: outcomes, now: t1})

	us := st.Clusters[1]
	if us.Reachable || us.LastError != "connection refused" {
		t.Errorf("us reachable=%v lastError=%q, want unreachable with the plan's error", us.Reachable, us.LastError)
	}
	if us.Nodes != 5 || us.PeersApplied != 2 || us.Granularity != meshv1alpha1.GranularityLocation {
		t.Errorf("us figures not carried over: %+v", us)
	}
	c := wantCondition(t, st, meshv1alpha1.ConditionClustersReachable, metav1.ConditionFalse, ReasonUnreachable)
	if !strings.Contains(c.Message, "us (connection refused)") || !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("ClustersReachable = %+v", c)
	}
	wantCondition(t, st, meshv1alpha1.ConditionPeersApplied, metav1.ConditionUnknown, ReasonTargetsUnreachable)
	wantCondition(t, st, meshv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonNotReady)
	// A condition whose status did not change keeps its transition time.
	if c := condition(t, st, meshv1alpha1.ConditionNetworksValid); !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("NetworksValid moved its transition time: %+v", c)
	}
}

func TestBuildStatusApplyErrors(t *testing.T) {
	outcomes := allApplied()
	outcomes["us"] = targetOutcome{reconciled: true, applied: 1, errors: []string{"applying Peer p: forbidden"}}
	st := buildStatus(statusInput{mesh: testMesh(), plan: testPlan(), outcomes: outcomes, now: t0})

	c := wantCondition(t, st, meshv1alpha1.ConditionPeersApplied, metav1.ConditionFalse, ReasonApplyFailed)
	if !strings.Contains(c.Message, "us: applying Peer p: forbidden") {
		t.Errorf("PeersApplied message = %q", c.Message)
	}
	if st.Clusters[1].LastError != "applying Peer p: forbidden" || st.Clusters[1].PeersApplied != 1 {
		t.Errorf("us = %+v", st.Clusters[1])
	}
	wantCondition(t, st, meshv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonNotReady)
}

func TestBuildStatusPeersMissingWithoutErrors(t *testing.T) {
	outcomes := allApplied()
	outcomes["eu"] = targetOutcome{reconciled: true, applied: 1}
	st := buildStatus(statusInput{mesh: testMesh(), plan: testPlan(), outcomes: outcomes, now: t0})
	c := wantCondition(t, st, meshv1alpha1.ConditionPeersApplied, metav1.ConditionFalse, ReasonApplyFailed)
	if !strings.Contains(c.Message, "eu (1 of 2)") {
		t.Errorf("PeersApplied message = %q", c.Message)
	}
}

func TestBuildStatusNetworkConflicts(t *testing.T) {
	plan := testPlan()
	plan.View.Conflicts = []meshv1alpha1.PlanIssue{
		{Reason: planner.ConflictNameTaken, Cluster: "eu", Target: "us", Message: "a name"},
		{Reason: planner.ConflictCIDRClaimedByKept, Cluster: "eu", Target: "us", Message: "waits for a kept Peer"},
		{Reason: planner.ConflictCIDRClaimedTwice, Cluster: "eu", Message: "10.0.0.0/24 twice"},
	}
	st := buildStatus(statusInput{mesh: testMesh(), plan: plan, outcomes: allApplied(), now: t0})
	c := wantCondition(t, st, meshv1alpha1.ConditionNetworksValid, metav1.ConditionFalse, ReasonNetworkConflicts)
	if !strings.Contains(c.Message, "CIDRClaimedTwice (eu): 10.0.0.0/24 twice") || strings.Contains(c.Message, "a name") || strings.Contains(c.Message, "kept") {
		t.Errorf("NetworksValid message = %q, want the network conflict only", c.Message)
	}
	// Ready follows reachability and applied Peers, as the API documents:
	// here every cluster still carries something of the other.
	wantCondition(t, st, meshv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonReady)

	// Conflicts of keys, names, or addresses waiting for kept Peers leave
	// the networks valid.
	plan.View.Conflicts = plan.View.Conflicts[:2]
	st = buildStatus(statusInput{mesh: testMesh(), plan: plan, outcomes: allApplied(), now: t0})
	wantCondition(t, st, meshv1alpha1.ConditionNetworksValid, metav1.ConditionTrue, ReasonValid)
}

func TestBuildStatusConflictsKeepPeersOut(t *testing.T) {
	tests := []struct {
		name string
		// block removes every Peer of these sources from the other cluster.
		block     []string
		conflicts []meshv1alpha1.PlanIssue
		carried   metav1.ConditionStatus
		ready     metav1.ConditionStatus
		reason    string
		messages  []string
	}{
		{name: "nothing in the way", carried: metav1.ConditionTrue, ready: metav1.ConditionTrue, reason: ReasonReady},
		{
			name: "a conflict that leaves both ways carried",
			conflicts: []meshv1alpha1.PlanIssue{
				{Reason: planner.ConflictPublicKeyInUse, Cluster: "us", Target: "eu", Message: "group b"},
			},
			carried: metav1.ConditionFalse, ready: metav1.ConditionTrue, reason: ReasonReady,
			messages: []string{"1 conflicts keep groups or Peers out of the mesh (PublicKeyInUse 1)", "PublicKeyInUse (us -> eu): group b"},
		},
		{
			name:  "every group of us kept out of eu",
			block: []string{"us"},
			conflicts: []meshv1alpha1.PlanIssue{
				{Reason: planner.ConflictPublicKeyInUse, Cluster: "us", Target: "eu", Message: "groups a, b"},
				{Reason: planner.ConflictNameTaken, Cluster: "us", Target: "eu", Message: "us-a"},
				{Reason: planner.ConflictHostAccessDenied, Cluster: "us", Target: "eu", Message: "Granted's to tell"},
			},
			carried: metav1.ConditionFalse, ready: metav1.ConditionFalse, reason: ReasonNothingCarried,
			messages: []string{"2 conflicts keep groups or Peers out of the mesh (PeerNameTaken 1, PublicKeyInUse 1)", "nothing is carried us -> eu"},
		},
		{
			name:  "both ways",
			block: []string{"us", "eu"},
			conflicts: []meshv1alpha1.PlanIssue{
				{Reason: planner.ConflictPublicKeyInUse, Cluster: "us", Target: "eu", Message: "groups a, b"},
				{Reason: planner.ConflictPublicKeyInUse, Cluster: "eu", Target: "us", Message: "groups a, b"},
			},
			carried: metav1.ConditionFalse, ready: metav1.ConditionFalse, reason: ReasonNothingCarried,
			messages: []string{"(PublicKeyInUse 2)", "nothing is carried eu -> us; us -> eu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := testPlan()
			plan.View.Conflicts = tt.conflicts
			outcomes := allApplied()
			for _, src := range tt.block {
				target := map[string]string{"eu": "us", "us": "eu"}[src]
				plan.DesiredPeers[target] = planner.PeerList{}
				plan.View.Targets[slices.IndexFunc(plan.View.Targets, func(tp meshv1alpha1.TargetPlan) bool { return tp.Cluster == target })].DesiredPeers = 0
				outcomes[target] = targetOutcome{reconciled: true}
			}
			st := buildStatus(statusInput{mesh: testMesh(), plan: counted(plan), outcomes: outcomes, now: t0})
			carried := condition(t, st, meshv1alpha1.ConditionPeersCarried)
			ready := wantCondition(t, st, meshv1alpha1.ConditionReady, tt.ready, tt.reason)
			if carried.Status != tt.carried {
				t.Errorf("PeersCarried = %s (%s), want %s", carried.Status, carried.Message, tt.carried)
			}
			for _, m := range tt.messages {
				if !strings.Contains(carried.Message+" | "+ready.Message, m) {
					t.Errorf("%q missing from PeersCarried %q and Ready %q", m, carried.Message, ready.Message)
				}
			}
			if strings.Contains(carried.Message, "Granted's to tell") {
				t.Errorf("PeersCarried tells a host access conflict: %q", carried.Message)
			}
		})
	}
}

func TestBuildStatusPlanFailed(t *testing.T) {
	mesh := testMesh()
	mesh.Status = buildStatus(statusInput{mesh: mesh, plan: testPlan(), outcomes: allApplied(), now: t0})
	st := buildStatus(statusInput{mesh: mesh, planErr: errors.New("bad input"), now: t1})
	c := wantCondition(t, st, meshv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonPlanFailed)
	if c.Message != "bad input" {
		t.Errorf("Ready message = %q", c.Message)
	}
	if len(st.Clusters) != 2 {
		t.Errorf("figures dropped on a failed plan: %+v", st.Clusters)
	}
}

func TestStatusChangedIgnoresUnmovedTransitionTimes(t *testing.T) {
	mesh := testMesh()
	mesh.Status = buildStatus(statusInput{mesh: mesh, plan: testPlan(), outcomes: allApplied(), now: t0})

	same := buildStatus(statusInput{mesh: mesh, plan: testPlan(), outcomes: allApplied(), now: t1})
	if statusChanged(&mesh.Status, &same) {
		t.Errorf("an identical pass a minute later counts as a change:\nhave %+v\nwant %+v", mesh.Status, same)
	}
	// Condition order is not significant.
	reordered := mesh.Status.DeepCopy()
	reordered.Conditions[0], reordered.Conditions[1] = reordered.Conditions[1], reordered.Conditions[0]
	if statusChanged(&mesh.Status, reordered) {
		t.Error("reordered conditions count as a change")
	}
	// Sub-second precision is lost on the way through the API.
	rounded := mesh.Status.DeepCopy()
	withNanos := mesh.Status.DeepCopy()
	withNanos.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(300 * time.Millisecond))
	if statusChanged(rounded, withNanos) {
		t.Error("sub-second transition times count as a change")
	}

	outcomes := allApplied()
	outcomes["eu"] = targetOutcome{reconciled: true, applied: 1}
	changed := buildStatus(statusInput{mesh: mesh, plan: testPlan(), outcomes: outcomes, now: t1})
	if !statusChanged(&mesh.Status, &changed) {
		t.Error("a missing Peer does not count as a change")
	}
	mesh.Generation++
	bumped := buildStatus(statusInput{mesh: mesh, plan: testPlan(), outcomes: allApplied(), now: t1})
	if !statusChanged(&mesh.Status, &bumped) {
		t.Error("a new generation does not count as a change")
	}
}

func TestDeletionStatus(t *testing.T) {
	mesh := testMesh()
	mesh.Status = buildStatus(statusInput{mesh: mesh, plan: testPlan(), outcomes: allApplied(), now: t0})
	st := deletionStatus(mesh, ReasonRemovalBlocked, "waiting for us", t1)
	c := wantCondition(t, st, meshv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonRemovalBlocked)
	if c.Message != "waiting for us" || !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("Ready = %+v", c)
	}
	if len(st.Clusters) != 2 {
		t.Errorf("figures dropped while deleting: %+v", st.Clusters)
	}
	if again := deletionStatus(&meshv1alpha1.ClusterMesh{ObjectMeta: mesh.ObjectMeta, Status: st}, ReasonRemovalBlocked, "waiting for us", t1); statusChanged(&st, &again) {
		t.Error("the same deletion status counts as a change")
	}
}

func TestSummarize(t *testing.T) {
	if got := summarize([]string{"a", "b"}, 3); got != "a; b" {
		t.Errorf("summarize = %q", got)
	}
	if got := summarize([]string{"a", "b", "c", "d"}, 2); got != "a; b; and 2 more" {
		t.Errorf("summarize = %q", got)
	}
}
