package clustermeshgrant

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestTable(t *testing.T) {
	tests := []struct {
		name string
		spec meshv1alpha1.ClusterMeshGrantSpec
		want []interface{}
	}{
		{"by name", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"a", "b"}, MemberNetworks: []string{"10.52.0.0/16", "fd00::/8"}},
			[]interface{}{"g", "a,b", "10.52.0.0/16,fd00::/8", "<none>", "<unknown>", "<none>", "1000 (8192 KiB)", "<none>"}},
		{"by selector", meshv1alpha1.ClusterMeshGrantSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "net"}}, LocalNetworks: []string{"10.42.0.0/16"}, MemberServers: []string{"127.0.0.0/8"}},
			[]interface{}{"g", "team=net", "<none>", "10.42.0.0/16", "<unknown>", "127.0.0.0/8", "1000 (8192 KiB)"}},
		{"both, selector matching all", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"a"}, NamespaceSelector: &metav1.LabelSelector{}},
			[]interface{}{"g", "a + <all>", "<none>", "<none>", "<unknown>", "<none>", "1000 (8192 KiB)"}},
		{"host Peer limits set", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"a"}, MaxHostPeers: ptr.To[int32](20), MaxHostPeerKiB: ptr.To[int32](64)},
			[]interface{}{"g", "a", "<none>", "<none>", "<unknown>", "<none>", "20 (64 KiB)"}},
		{"service namespaces", meshv1alpha1.ClusterMeshGrantSpec{Namespaces: []string{"a"}, ServiceNamespaces: []string{"shop", "web"}},
			[]interface{}{"g", "a", "<none>", "<none>", "<unknown>", "<none>", "1000 (8192 KiB)", "shop,web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &meshv1alpha1.ClusterMeshGrant{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: tt.spec}
			table, err := tableConvertor{}.ConvertToTable(context.Background(), g, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(columns) {
				t.Fatalf("rows %+v", table.Rows)
			}
			for i, want := range tt.want {
				if got := table.Rows[0].Cells[i]; got != want {
					t.Errorf("column %s: %v, want %v", columns[i].Name, got, want)
				}
			}
		})
	}
}
