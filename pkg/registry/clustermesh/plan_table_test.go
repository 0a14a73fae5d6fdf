package clustermesh

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func testPlanView() *meshv1alpha1.ClusterMeshPlan {
	return &meshv1alpha1.ClusterMeshPlan{
		TypeMeta:   metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMeshPlan"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "prod"},
		Clusters: []meshv1alpha1.ClusterPlan{
			{
				Name: "eu", Reachable: true, Granularity: meshv1alpha1.GranularityLocation,
				Summary: meshv1alpha1.ClusterPlanSummary{Nodes: 9, AdvertisedNodes: 6, SkippedByReason: []meshv1alpha1.ReasonCount{
					{Reason: "NoPublicKey", Count: 1}, {Reason: "NotReady", Count: 2}}},
				Groups: []meshv1alpha1.GroupPlan{{Name: "location:a", Leader: "a1"}, {Name: "location:b", Leader: "b1"}},
			},
			{Name: "home", Reachable: true, BehindNAT: true, Granularity: meshv1alpha1.GranularityFull,
				Summary: meshv1alpha1.ClusterPlanSummary{Nodes: 6, AdvertisedNodes: 6},
				Groups:  []meshv1alpha1.GroupPlan{{Leader: "n1"}, {Leader: "n2"}, {Leader: "n3"}, {Leader: "n4"}, {Leader: "n5"}, {Leader: "n6"}}},
			{Name: "us", BehindNAT: true, Error: "Secret tenant/us not found (SecretNotFound)"},
		},
		Targets: []meshv1alpha1.TargetPlan{
			{Cluster: "eu", DiffState: meshv1alpha1.DiffStateComputed, DesiredPeers: 8, Create: []string{"p1", "p2"},
				Update: []meshv1alpha1.PeerUpdate{{Name: "p3", Fields: []string{"spec.endpoint"}}}, Delete: []string{"p4"}},
			{Cluster: "home", DiffState: meshv1alpha1.DiffStateComputed, DesiredPeers: 2, Unchanged: []string{"p5", "p6"}},
			{Cluster: "us", DiffState: meshv1alpha1.DiffStateUnknown},
		},
		Conflicts: []meshv1alpha1.PlanIssue{
			{Reason: "PublicKeyInUse", Cluster: "eu", Target: "home"},
			{Reason: "NetworkOverlap", Cluster: "eu", Target: "eu"},
		},
		Warnings: []meshv1alpha1.PlanIssue{{Reason: "ClusterUnreachable", Cluster: "us"}, {Reason: "CredentialExpiring", Cluster: "eu"}},
		Paths:    []meshv1alpha1.PathPlan{{Clusters: []string{"home", "us"}, Kind: meshv1alpha1.PathNone}},
	}
}

func TestPlanTable(t *testing.T) {
	plan := testPlanView()
	table, err := (&PlanREST{}).ConvertToTable(context.Background(), plan, &metav1.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]interface{}{
		"eu": {"eu", true, "Location", int64(6), int64(3), int64(2), int64(1), int64(1), "Direct",
			"a1,b1", int64(2), int64(1), "NotReady (2)", "<none>"},
		"home": {"home", true, "Full", int64(6), int64(0), int64(0), int64(0), int64(0), "BehindNAT, no path to us",
			"n1,n2,n3,n4 +2 more", int64(1), int64(0), "<none>", "<none>"},
		"us": {"us", false, "<unknown>", "<unknown>", "<unknown>", "<unknown>", "<unknown>", "<unknown>", "BehindNAT, no path to home",
			"<none>", int64(0), int64(1), "<none>", "Secret tenant/us not found (SecretNotFound)"},
	}
	if len(table.Rows) != len(want) {
		t.Fatalf("%d rows, want one per cluster (%d)", len(table.Rows), len(want))
	}
	for i, row := range table.Rows {
		if len(row.Cells) != len(planColumns) {
			t.Fatalf("row %d: %d cells for %d columns", i, len(row.Cells), len(planColumns))
		}
		name := row.Cells[0].(string)
		if name != plan.Clusters[i].Name {
			t.Errorf("row %d is %s, want the plan's order (%s)", i, name, plan.Clusters[i].Name)
		}
		if !reflect.DeepEqual(row.Cells, want[name]) {
			t.Errorf("%s:\nwant %#v\ngot  %#v", name, want[name], row.Cells)
		}
	}
	checkRowObjects(t, table, "prod")
}

// Asked for objects (kubectl get --sort-by), every row carries the plan
// restricted to its cluster; the shared plan is left as it was.
func TestPlanTableObjects(t *testing.T) {
	plan := testPlanView()
	before := plan.DeepCopy()
	table, err := (&PlanREST{}).ConvertToTable(context.Background(), plan, &metav1.TableOptions{IncludeObject: metav1.IncludeObject})
	if err != nil {
		t.Fatal(err)
	}
	checkRowObjects(t, table, "prod")
	for i, row := range table.Rows {
		got, ok := row.Object.Object.(*meshv1alpha1.ClusterMeshPlan)
		if !ok {
			t.Fatalf("row %d object %T", i, row.Object.Object)
		}
		name := plan.Clusters[i].Name
		if len(got.Clusters) != 1 || got.Clusters[0].Name != name || len(got.Targets) != 1 || got.Targets[0].Cluster != name {
			t.Errorf("row %s: object holds clusters %v, targets %v", name, got.Clusters, got.Targets)
		}
		for _, issue := range append(append([]meshv1alpha1.PlanIssue{}, got.Conflicts...), got.Warnings...) {
			if issue.Cluster != name && issue.Target != name {
				t.Errorf("row %s carries an issue about others: %+v", name, issue)
			}
		}
	}
	if rows := table.Rows; len(rows[0].Object.Object.(*meshv1alpha1.ClusterMeshPlan).Conflicts) != 2 {
		t.Errorf("eu's object lacks its conflicts")
	}
	if !reflect.DeepEqual(plan, before) {
		t.Error("building the table changed the plan")
	}
	if _, err := (&PlanREST{}).ConvertToTable(context.Background(), &meshv1alpha1.ClusterMesh{}, nil); err == nil {
		t.Error("a ClusterMesh printed as a plan table")
	}
}

// checkRowObjects checks what the generic server does with every row: it
// reads the object's metadata (a row without an object fails the request)
// and, for includeObject=Object, converts it to the view's version, which
// only works for a kind of the mesh group.
// checkCells: the table has want's rows, in order, each with a cell per
// column.
func checkCells(t *testing.T, table *metav1.Table, want [][]interface{}, columns int) {
	t.Helper()
	if table.Rows == nil || len(table.Rows) != len(want) {
		t.Fatalf("%d rows (nil: %v), want %d", len(table.Rows), table.Rows == nil, len(want))
	}
	for i, row := range table.Rows {
		if !reflect.DeepEqual(row.Cells, want[i]) {
			t.Errorf("row %d:\nwant %#v\ngot  %#v", i, want[i], row.Cells)
		}
		if len(row.Cells) != columns {
			t.Errorf("row %d: %d cells for %d columns", i, len(row.Cells), columns)
		}
	}
}

func checkRowObjects(t *testing.T, table *metav1.Table, mesh string) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := meshv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for i, row := range table.Rows {
		m, err := meta.Accessor(row.Object.Object)
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if m.GetName() != mesh {
			t.Errorf("row %d names %q, want the mesh %q", i, m.GetName(), mesh)
		}
		if _, err := scheme.ConvertToVersion(row.Object.Object, meshv1alpha1.SchemeGroupVersion); err != nil {
			t.Errorf("row %d: %v", i, err)
		}
	}
}
