package clustermesh

import (
	"context"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// testServicesView: shop/cart exported by a (valid, one endpoint left out)
// and b (a port conflict, its cluster unreachable); imported in a, and
// blocked in b, where a user's Service holds the derived name; c exports a
// Service that does not exist.
func testServicesView() *meshv1alpha1.ClusterMeshServices {
	v := &meshv1alpha1.ClusterMeshServices{
		TypeMeta:   metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMeshServices"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "m"},
		Clusters: []meshv1alpha1.ClusterImports{
			{Cluster: "a", Reachable: true, Imports: []meshv1alpha1.ImportState{{
				Namespace: "shop", Name: "cart", Type: "ClusterSetIP", IPs: []string{"10.96.0.9", "fd00::9"}, DerivedService: "derived-abc",
				Ports:          []meshv1alpha1.ImportPort{{Name: "http", Protocol: "TCP", Port: 80}, {Protocol: "UDP", Port: 53}},
				SourceClusters: []string{"a", "b"}, Endpoints: 3,
			}}},
			{Cluster: "b", Imports: []meshv1alpha1.ImportState{{
				Namespace: "shop", Name: "cart", Type: "ClusterSetIP", Ports: []meshv1alpha1.ImportPort{{Protocol: "TCP", Port: 80}}, SourceClusters: []string{"a", "b"},
				Blocked: "DerivedServiceTaken", Message: "a Service this mesh did not write holds the name",
			}}},
			{Cluster: "c", Reachable: true},
		},
		Exports: []meshv1alpha1.ExportState{
			{Cluster: "a", Namespace: "shop", Name: "cart", Valid: "Valid", Endpoints: 2,
				LeftOut: []meshv1alpha1.ReasonCount{{Reason: "NotReady", Count: 1}, {Reason: "OutsidePodCIDRs", Count: 2}}},
			{Cluster: "b", Namespace: "shop", Name: "cart", Valid: "Valid", Conflicts: []string{"PortConflict", "TypeConflict"}, Endpoints: 1, Stale: true},
			{Cluster: "c", Namespace: "shop", Name: "gone", Valid: "NoService"},
		},
	}
	return v
}

func TestServicesTable(t *testing.T) {
	importA := []interface{}{"a", "Import", "shop/cart", "ClusterSetIP", "http:80/TCP,53/UDP", "10.96.0.9,fd00::9", "a,b", int64(3), "Imported", "<none>", true, "derived-abc", "<none>"}
	importB := []interface{}{"b", "Import", "shop/cart", "ClusterSetIP", "80/TCP", "<none>", "a,b", int64(0), "DerivedServiceTaken", "<none>", false, "<none>", "a Service this mesh did not write holds the name"}
	exportA := []interface{}{"a", "Export", "shop/cart", "<none>", "<none>", "<none>", "<none>", int64(2), "Exported", "NotReady=1,OutsidePodCIDRs=2", true, "<none>", "<none>"}
	exportB := []interface{}{"b", "Export", "shop/cart", "<none>", "<none>", "<none>", "<none>", int64(1), "PortConflict,TypeConflict", "<none>", false, "<none>", "<none>"}
	exportC := []interface{}{"c", "Export", "shop/gone", "<none>", "<none>", "<none>", "<none>", int64(0), "NoService", "<none>", true, "<none>", "<none>"}
	ofB := testServicesView()
	onlyCluster(ofB, "b")
	notGranted := []meshv1alpha1.ReasonCount{{Reason: "HostNamespaceNotGranted", Count: 2}}
	hidden := &meshv1alpha1.ClusterMeshServices{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Clusters: []meshv1alpha1.ClusterImports{{Cluster: "h", Reachable: true, HiddenImports: notGranted, HiddenExports: notGranted}}}
	message := "2 not shown: in namespaces of this cluster the mesh may not use"
	hiddenImports := []interface{}{"h", "Import", "<none>", "<none>", "<none>", "<none>", "<none>", int64(0), "HostNamespaceNotGranted", "<none>", true, "<none>", message}
	hiddenExports := []interface{}{"h", "Export", "<none>", "<none>", "<none>", "<none>", "<none>", int64(0), "HostNamespaceNotGranted", "<none>", true, "<none>", message}
	for _, tc := range []struct {
		name string
		view *meshv1alpha1.ClusterMeshServices
		want [][]interface{}
	}{
		{"imports of every cluster, then every export", testServicesView(), [][]interface{}{importA, importB, exportA, exportB, exportC}},
		{"?cluster=b", ofB, [][]interface{}{importB, exportB}},
		{"counted, not named: no Service", hidden, [][]interface{}{hiddenImports, hiddenExports}},
		{"a mesh without exports", &meshv1alpha1.ClusterMeshServices{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Clusters: []meshv1alpha1.ClusterImports{{Cluster: "a"}}}, nil},
	} {
		for _, objects := range []bool{false, true} {
			opts := &metav1.TableOptions{}
			if objects {
				opts.IncludeObject = metav1.IncludeObject
			}
			t.Run(tc.name+", includeObject="+string(opts.IncludeObject), func(t *testing.T) {
				before := tc.view.DeepCopy()
				table, err := (&ServicesREST{}).ConvertToTable(context.Background(), tc.view, opts)
				if err != nil {
					t.Fatal(err)
				}
				checkCells(t, table, tc.want, len(servicesColumns))
				if objects {
					for i, row := range table.Rows {
						got := row.Object.Object.(*meshv1alpha1.ClusterMeshServices)
						switch {
						case tc.want[i][2] == "<none>":
							if len(got.Exports) != 0 || len(got.Clusters) != 1 || len(got.Clusters[0].Imports) != 0 || len(got.Clusters[0].HiddenImports)+len(got.Clusters[0].HiddenExports) != 1 {
								t.Errorf("row %d: object %+v is not the view of its count", i, got)
							}
						case tc.want[i][1] == "Import":
							if len(got.Exports) != 0 || len(got.Clusters) != 1 || got.Clusters[0].Cluster != tc.want[i][0] || len(got.Clusters[0].Imports) != 1 {
								t.Errorf("row %d: object %+v is not the view of its import", i, got)
							}
						case tc.want[i][1] == "Export":
							if len(got.Clusters) != 0 || len(got.Exports) != 1 || got.Exports[0].Cluster != tc.want[i][0] {
								t.Errorf("row %d: object %+v is not the view of its export", i, got)
							}
						}
					}
				}
				checkRowObjects(t, table, "m")
				if !reflect.DeepEqual(tc.view, before) {
					t.Error("building the table changed the view")
				}
			})
		}
	}
	if _, err := (&ServicesREST{}).ConvertToTable(context.Background(), &meshv1alpha1.ClusterMeshPeers{}, nil); err == nil {
		t.Error("a peers view printed as a services table")
	}
}

// TestOnlyCluster: ?cluster= keeps what the cluster imports and exports.
func TestOnlyCluster(t *testing.T) {
	for _, tc := range []struct {
		cluster          string
		imports, exports int
	}{{"a", 1, 1}, {"b", 1, 1}, {"c", 0, 1}, {"none", 0, 0}} {
		t.Run(tc.cluster, func(t *testing.T) {
			v := testServicesView()
			onlyCluster(v, tc.cluster)
			imports := 0
			for _, c := range v.Clusters {
				if c.Cluster != tc.cluster {
					t.Errorf("cluster %s kept", c.Cluster)
				}
				imports += len(c.Imports)
			}
			for _, e := range v.Exports {
				if e.Cluster != tc.cluster {
					t.Errorf("export of %s kept", e.Cluster)
				}
			}
			if imports != tc.imports || len(v.Exports) != tc.exports {
				t.Errorf("%d imports and %d exports, want %d and %d", imports, len(v.Exports), tc.imports, tc.exports)
			}
		})
	}
}
