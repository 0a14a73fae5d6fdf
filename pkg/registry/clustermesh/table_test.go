package clustermesh

import (
	"context"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestConvertToTable(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-5 * time.Hour))
	spec := meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{{Name: "eu", Local: true}, {Name: "us"}}}
	tests := []struct {
		name string
		mesh meshv1alpha1.ClusterMesh
		want []interface{}
	}{
		{
			name: "new mesh without status",
			mesh: meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Name: "fresh", CreationTimestamp: created}, Spec: spec},
			want: []interface{}{"fresh", int64(2), "Unknown", "0/0", int64(0), "5h", "eu", "0/2", "0/0", "Unknown", ""},
		},
		{
			name: "mesh with one cluster down",
			mesh: meshv1alpha1.ClusterMesh{
				ObjectMeta: metav1.ObjectMeta{Name: "prod", CreationTimestamp: created},
				Spec:       spec,
				Status: meshv1alpha1.ClusterMeshStatus{
					Conditions: []metav1.Condition{
						{Type: meshv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "ClusterUnreachable", Message: "us is unreachable"},
						{Type: meshv1alpha1.ConditionPeersCarried, Status: metav1.ConditionFalse, Reason: "ConflictsKeepPeersOut", Message: "1 conflicts"},
					},
					Clusters: []meshv1alpha1.ClusterStatus{
						{Name: "eu", Reachable: true, Nodes: 3, ReadyNodes: 2, PeersDesired: 4, PeersApplied: 4, SkippedNodes: 1},
						{Name: "us", Nodes: 5, ReadyNodes: 5, PeersDesired: 2, PeersApplied: 1, SkippedNodes: 2},
					},
				},
			},
			want: []interface{}{"prod", int64(2), "False", "5/6", int64(3), "5h", "eu", "1/2", "7/8", "False", "us is unreachable"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := tableConvertor{}.ConvertToTable(context.Background(), &tt.mesh, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("want one row, got %d", len(table.Rows))
			}
			if got := table.Rows[0].Cells; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells:\nwant %#v\ngot  %#v", tt.want, got)
			}
			if len(table.ColumnDefinitions) != len(tt.want) {
				t.Errorf("%d columns defined for %d cells", len(table.ColumnDefinitions), len(tt.want))
			}
		})
	}
	t.Run("list", func(t *testing.T) {
		list := &meshv1alpha1.ClusterMeshList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}, Items: []meshv1alpha1.ClusterMesh{tests[0].mesh, tests[1].mesh}}
		table, err := tableConvertor{}.ConvertToTable(context.Background(), list, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(table.Rows) != 2 || table.ResourceVersion != "42" {
			t.Fatalf("want 2 rows at resourceVersion 42, got %d rows at %q", len(table.Rows), table.ResourceVersion)
		}
	})
}
