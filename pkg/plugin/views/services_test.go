package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// testServices: shop/cart exported by a (endpoints left out) and b (a port
// conflict, b unreachable), imported in a and blocked in c; shop/gone
// exported by c without a Service.
func testServices() *meshv1alpha1.ClusterMeshServices {
	return &meshv1alpha1.ClusterMeshServices{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "demo"},
		GeneratedAt: metav1.NewTime(time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)),
		Clusters: []meshv1alpha1.ClusterImports{
			{Cluster: "a", Reachable: true, Imports: []meshv1alpha1.ImportState{{
				Namespace: "shop", Name: "cart", Type: "ClusterSetIP", IPs: []string{"10.96.0.9"}, DerivedService: "derived-x",
				Ports:          []meshv1alpha1.ImportPort{{Name: "http", Protocol: "TCP", Port: 80}, {Protocol: "UDP", Port: 53}},
				SourceClusters: []string{"a", "b"}, Endpoints: 3,
			}}},
			{Cluster: "b", Imports: []meshv1alpha1.ImportState{{
				Namespace: "shop", Name: "cart", Type: "Headless", SourceClusters: []string{"a", "b"}, Endpoints: 3,
			}}},
			{Cluster: "c", Reachable: true, Imports: []meshv1alpha1.ImportState{{
				Namespace: "shop", Name: "cart", Type: "ClusterSetIP", SourceClusters: []string{"a", "b"},
				Blocked: "DerivedServiceTaken", Message: "Service shop/derived-x exists and was not written by this mesh",
			}}},
		},
		Exports: []meshv1alpha1.ExportState{
			{Cluster: "a", Namespace: "shop", Name: "cart", Valid: "Valid", Endpoints: 2,
				LeftOut: []meshv1alpha1.ReasonCount{{Reason: "NotReady", Count: 1}, {Reason: "OutsidePodCIDRs", Count: 2}}},
			{Cluster: "b", Namespace: "shop", Name: "cart", Valid: "Valid", Conflicts: []string{"PortConflict"}, Endpoints: 1, Stale: true},
			{Cluster: "c", Namespace: "shop", Name: "gone", Valid: "NoService"},
		},
	}
}

func TestRenderServices(t *testing.T) {
	for _, tc := range []struct {
		name, cluster string
		view          *meshv1alpha1.ClusterMeshServices
		want, notWant []string
	}{
		{name: "imports and exports", view: testServices(), want: []string{
			"ClusterMesh ns/demo, services computed at 2026-11-26T04:00:00Z",
			"Cluster a\n  imports shop/cart (ClusterSetIP) at 10.96.0.9, ports http:80/TCP, 53/UDP, 3 endpoints from a, b\n",
			"Cluster b (unreachable: these imports are written once it answers)\n  imports shop/cart (Headless), 3 endpoints from a, b\n",
			"imports shop/cart (ClusterSetIP): blocked, DerivedServiceTaken: Service shop/derived-x exists",
			"shop/cart of a: exported, 2 endpoints; left out: 1 NotReady, 2 OutsidePodCIDRs\n",
			"shop/cart of b: exported, 1 endpoints; conflicts: PortConflict (the oldest export decides); the cluster is unreachable: its last known endpoints are kept\n",
			"shop/gone of c: not exported, NoService\n",
		}},
		{name: "nothing exported", view: &meshv1alpha1.ClusterMeshServices{Clusters: []meshv1alpha1.ClusterImports{{Cluster: "a", Reachable: true}}},
			want: []string{"Cluster a\n  imports nothing\n", "No ServiceExport in any member cluster."}, notWant: []string{"Exports"}},
		{name: "an import without its IP yet", view: &meshv1alpha1.ClusterMeshServices{Clusters: []meshv1alpha1.ClusterImports{{Cluster: "a", Reachable: true,
			Imports: []meshv1alpha1.ImportState{{Namespace: "s", Name: "n", Type: "ClusterSetIP", SourceClusters: []string{"b"}}}}}},
			want: []string{"imports s/n (ClusterSetIP) without an IP yet, 0 endpoints from b"}},
		{name: "counted, not named", view: &meshv1alpha1.ClusterMeshServices{Clusters: []meshv1alpha1.ClusterImports{{Cluster: "host", Reachable: true,
			HiddenImports: []meshv1alpha1.ReasonCount{{Reason: "HostNamespaceNotGranted", Count: 1}}, HiddenExports: []meshv1alpha1.ReasonCount{{Reason: "HostNamespaceNotGranted", Count: 2}}}}},
			want:    []string{"Cluster host\n  1 imports not shown: HostNamespaceNotGranted: the namespace is on the host cluster", "\n  2 exports not shown: HostNamespaceNotGranted: "},
			notWant: []string{"imports nothing"}},
		{name: "counted, not named, with ?cluster=", cluster: "host", view: &meshv1alpha1.ClusterMeshServices{Clusters: []meshv1alpha1.ClusterImports{{Cluster: "host", Reachable: true,
			HiddenExports: []meshv1alpha1.ReasonCount{{Reason: "HostNamespaceNotGranted", Count: 2}}}}},
			want: []string{"2 exports not shown", "No other ServiceExport in cluster host."}, notWant: []string{"No ServiceExport"}},
		{name: "?cluster= of a cluster that exports nothing", cluster: "b", view: &meshv1alpha1.ClusterMeshServices{Clusters: []meshv1alpha1.ClusterImports{{Cluster: "b"}}},
			want: []string{"Cluster b (unreachable", "No ServiceExport in cluster b."}, notWant: []string{"Cluster a", "any member cluster"}},
		{name: "a cluster whose services are not used says why", view: &meshv1alpha1.ClusterMeshServices{Clusters: []meshv1alpha1.ClusterImports{
			{Cluster: "a", Reachable: true}, {Cluster: "b", Reason: "MCSCRDMissing", Message: "install the mcs-api CRDs"}}},
			want:    []string{"Cluster b (unreachable: these imports are written once it answers)\n  its services are not used: MCSCRDMissing: install the mcs-api CRDs\n"},
			notWant: []string{"Cluster a\n  its services"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			RenderServices(&out, tc.view, tc.cluster)
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("lacks %q:\n%s", want, out.String())
				}
			}
			for _, notWant := range tc.notWant {
				if strings.Contains(out.String(), notWant) {
					t.Errorf("has %q:\n%s", notWant, out.String())
				}
			}
		})
	}
}

func TestRenderWhyService(t *testing.T) {
	for _, tc := range []struct {
		name, service, cluster string
		view                   *meshv1alpha1.ClusterMeshServices
		want                   []string
		wantErr                string
	}{
		{name: "every export and import", service: "shop/cart", view: testServices(), want: []string{
			"Service shop/cart\n",
			"export of a: exported (Valid), 2 endpoints carried\n    1 endpoints left out, NotReady: the endpoint is not ready\n",
			"2 endpoints left out, OutsidePodCIDRs: the address is not inside the exporting cluster's declared podCIDRs",
			"export of b: exported (Valid), 1 endpoints carried\n    conflict PortConflict: a port has another number or protocol",
			"b is unreachable: its last known endpoints are kept",
			"in a: imports shop/cart (ClusterSetIP) at 10.96.0.9",
			"in b: imports shop/cart (Headless), 3 endpoints from a, b\n    b is unreachable: written once it answers\n",
			"in c: blocked (DerivedServiceTaken: a Service this mesh did not write has the derived Service's name",
			"    Service shop/derived-x exists and was not written by this mesh\n",
		}},
		{name: "an invalid export", service: "shop/gone", view: testServices(),
			want: []string{"export of c: not exported (NoService: there is no Service of that name in the exporting cluster)"}},
		{name: "only imported in the cluster asked", service: "shop/cart", cluster: "c", view: onlyOf(testServices(), "c"),
			want: []string{"no ServiceExport here: it is exported from other clusters", "in c: blocked (DerivedServiceTaken"}},
		{name: "not exported anywhere", service: "shop/none", view: testServices(), wantErr: "no ServiceExport shop/none in any member cluster of clustermesh ns/demo"},
		{name: "not in the cluster asked", service: "shop/gone", cluster: "a", view: onlyOf(testServices(), "a"), wantErr: "no ServiceExport shop/gone in cluster a"},
		{name: "no namespace", service: "cart", view: testServices(), wantErr: "a service is named NAMESPACE/NAME"},
		{name: "too many slashes", service: "shop/cart/x", view: testServices(), wantErr: "a service is named NAMESPACE/NAME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := RenderWhyService(&out, tc.view, tc.service, tc.cluster)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// onlyOf is the view the server answers with ?cluster=.
func onlyOf(v *meshv1alpha1.ClusterMeshServices, cluster string) *meshv1alpha1.ClusterMeshServices {
	out := *v
	out.Clusters, out.Exports = nil, nil
	for _, c := range v.Clusters {
		if c.Cluster == cluster {
			out.Clusters = append(out.Clusters, c)
		}
	}
	for _, e := range v.Exports {
		if e.Cluster == cluster {
			out.Exports = append(out.Exports, e)
		}
	}
	return &out
}

// TestWhyServiceData: -o json carries the view's own exports and imports.
func TestWhyServiceData(t *testing.T) {
	d, err := WhyServiceData(testServices(), "shop/cart", "")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Namespace, Name string
		Exports         []meshv1alpha1.ExportState
		Imports         []struct {
			Cluster   string
			Reachable bool
			Blocked   string
			Endpoints int32
		}
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Namespace != "shop" || back.Name != "cart" || len(back.Exports) != 2 || len(back.Imports) != 3 ||
		back.Imports[1].Cluster != "b" || back.Imports[1].Reachable || back.Imports[1].Endpoints != 3 || back.Imports[2].Blocked != "DerivedServiceTaken" {
		t.Errorf("data %s", raw)
	}
}

// TestReasonHelp: every stable reason of the services computation has its
// sentence, read from the source so that a new reason cannot be missed.
func TestReasonHelp(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../planner/services/reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Reasons are the values of the file's constants: a literal, or
	// another package's constant it names (listed here, so that none is
	// missed).
	elsewhere := map[string]string{"planner.WarningServicesClusterShared": planner.WarningServicesClusterShared}
	var reasons []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				switch v := v.(type) {
				case *ast.BasicLit:
					s, err := strconv.Unquote(v.Value)
					if err != nil {
						t.Fatal(err)
					}
					reasons = append(reasons, s)
				case *ast.SelectorExpr:
					name := fmt.Sprintf("%s.%s", v.X, v.Sel.Name)
					if elsewhere[name] == "" {
						t.Fatalf("reasons.go names %s: add it to this test's list", name)
					}
					reasons = append(reasons, elsewhere[name])
				case *ast.Ident:
					// Another constant of the file, read where it is defined.
				default:
					t.Fatalf("reasons.go has a constant of unexpected form %T", v)
				}
			}
		}
	}
	if len(reasons) < 8 {
		t.Fatalf("found only %v in reasons.go: the test no longer reads the source", reasons)
	}
	for _, r := range reasons {
		if reasonHelp[r] == "" {
			t.Errorf("reason %s has no sentence in reasonHelp", r)
		}
	}
}

func TestServiceNames(t *testing.T) {
	for prefix, want := range map[string]string{"": "shop/cart,shop/gone", "shop/c": "shop/cart", "x": ""} {
		if got := strings.Join(serviceNames(testServices(), prefix), ","); got != want {
			t.Errorf("prefix %q: %q, want %q", prefix, got, want)
		}
	}
}
