package reconciler

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

func TestPlanEvents(t *testing.T) {
	p := &planner.Plan{Nodes: map[string]planner.NodeList{"eu": planner.NodeListOf(
		meshv1alpha1.NodeDecision{Node: "a", Included: true, Reason: planner.ReasonAdvertised},
		meshv1alpha1.NodeDecision{Node: "b", Reason: planner.ReasonNotReady, Message: "kg last checked in 1m5s ago"},
		meshv1alpha1.NodeDecision{Node: "c", Reason: planner.ReasonNoPodCIDR},
		meshv1alpha1.NodeDecision{Node: "d", Reason: planner.ReasonNotReady, Message: "kg last checked in 2m0s ago"},
	)}, View: meshv1alpha1.ClusterMeshPlan{
		Clusters:  []meshv1alpha1.ClusterPlan{{Name: "eu"}},
		Conflicts: []meshv1alpha1.PlanIssue{{Reason: planner.ConflictPublicKeyInUse, Cluster: "eu", Target: "us", Message: "key k"}},
		Warnings: []meshv1alpha1.PlanIssue{
			{Reason: planner.WarningCredentialExpiring, Cluster: "us", Message: "expires at T"},
			{Reason: planner.WarningPrivateEndpoint, Cluster: "us", Message: "not an event"},
		},
	}}
	got := planEvents(p)
	want := []meshEvent{
		{Type: "Warning", Reason: EventNodesSkipped, Message: "cluster eu: 1 node(s) not advertised (NoPodCIDR): c"},
		{Type: "Warning", Reason: EventNodesSkipped, Message: "cluster eu: 2 node(s) not advertised (NotReady): b, d"},
		{Type: "Warning", Reason: planner.ConflictPublicKeyInUse, Message: "PublicKeyInUse (eu -> us): key k"},
		{Type: "Warning", Reason: planner.WarningCredentialExpiring, Message: "CredentialExpiring (us): expires at T"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("planEvents =\n%v\nwant\n%v", got, want)
	}
}

func TestPlanEventsBoundExamples(t *testing.T) {
	var nodes []meshv1alpha1.NodeDecision
	for i := range 12 {
		nodes = append(nodes, meshv1alpha1.NodeDecision{Node: fmt.Sprintf("n%02d", i), Reason: planner.ReasonNoPublicKey})
	}
	p := &planner.Plan{Nodes: map[string]planner.NodeList{"eu": planner.NodeListOf(nodes...)},
		View: meshv1alpha1.ClusterMeshPlan{Clusters: []meshv1alpha1.ClusterPlan{{Name: "eu"}}}}
	got := planEvents(p)
	want := "cluster eu: 12 node(s) not advertised (NoPublicKey): n00, n01, n02, n03, n04 and 7 more"
	if len(got) != 1 || got[0].Message != want {
		t.Errorf("planEvents = %v, want one event %q", got, want)
	}
}

func TestEventFilterAnnouncesChangesOnly(t *testing.T) {
	f := newEventFilter()
	key := types.NamespacedName{Namespace: "ns", Name: "m"}
	a := meshEvent{Type: "Warning", Reason: "A", Message: "a"}
	b := meshEvent{Type: "Warning", Reason: "B", Message: "b"}

	if got := f.fresh(key, []meshEvent{a, b, a}); !slices.Equal(got, []meshEvent{a, b}) {
		t.Errorf("first pass = %v, want a, b once each", got)
	}
	if got := f.fresh(key, []meshEvent{a, b}); len(got) != 0 {
		t.Errorf("unchanged pass = %v, want nothing", got)
	}
	if got := f.fresh(key, []meshEvent{a}); len(got) != 0 {
		t.Errorf("pass that lost b = %v, want nothing", got)
	}
	if got := f.fresh(key, []meshEvent{a, b}); !slices.Equal(got, []meshEvent{b}) {
		t.Errorf("b coming back = %v, want b", got)
	}
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	if got := f.fresh(other, []meshEvent{a}); !slices.Equal(got, []meshEvent{a}) {
		t.Errorf("another mesh = %v, want a", got)
	}
	f.forget(key)
	if got := f.fresh(key, []meshEvent{a}); !slices.Equal(got, []meshEvent{a}) {
		t.Errorf("after forget = %v, want a", got)
	}
}

func TestLimitEvents(t *testing.T) {
	states := map[string]clusters.ClusterState{
		"b":    {Name: "b", Reason: memberaccess.ErrNamespaceBudgetExceeded, LastError: "over the share (NamespaceMemberBudgetExceeded)"},
		"a":    {Name: "a", Reason: memberaccess.ErrTooManyNodes, LastError: "too many (TooManyNodes)"},
		"down": {Name: "down", Reason: memberaccess.ErrUnreachable, LastError: "no answer"},
		"ok":   {Name: "ok", Synced: true},
	}
	got := limitEvents(states)
	want := []meshEvent{
		{Type: corev1.EventTypeWarning, Reason: "TooManyNodes", Message: "cluster a is not used: too many (TooManyNodes)"},
		{Type: corev1.EventTypeWarning, Reason: "NamespaceMemberBudgetExceeded", Message: "cluster b is not used: over the share (NamespaceMemberBudgetExceeded)"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}
