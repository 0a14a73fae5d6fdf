package reconciler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// TestForgetGauges: a replica that stops leading exposes none of the
// per-mesh gauges of its last term, and keeps its counters.
func TestForgetGauges(t *testing.T) {
	registerMetrics()
	const mesh, cluster = "ns/forget", "c"
	for _, g := range meshGauges() {
		g.WithLabelValues(mesh, cluster).Set(1)
	}
	applyErrors.WithLabelValues(mesh, cluster).Inc()
	names := []string{
		"kilo_mesh_peers_managed", "kilo_mesh_peers_desired", "kilo_mesh_cluster_reachable",
		"kilo_mesh_member_credential_expiry_timestamp_seconds", "kilo_mesh_apply_errors_total",
	}
	before := scrapeText(t, names)
	for _, n := range names {
		if !strings.Contains(before, n+`{cluster="c",mesh="ns/forget"}`) {
			t.Fatalf("no series of %s before:\n%s", n, before)
		}
	}
	forgetGauges()
	after := scrapeText(t, names)
	for _, n := range names[:4] {
		if strings.Contains(after, n+"{") {
			t.Errorf("%s still exposed after the term:\n%s", n, after)
		}
	}
	if !strings.Contains(after, `kilo_mesh_apply_errors_total{cluster="c",mesh="ns/forget"} 1`) {
		t.Errorf("the counter was dropped:\n%s", after)
	}
	forgetMeshMetrics(mesh)
}

// TestClusterSeries: the series of a cluster go when it leaves its mesh,
// those of the clusters that stay and of other meshes stay.
func TestClusterSeries(t *testing.T) {
	registerMetrics()
	const mesh, other = "ns/renamed", "ns/other"
	names := []string{"kilo_mesh_peers_managed", "kilo_mesh_peer_writes_total", "kilo_mesh_apply_errors_total"}
	set := func(mesh, cluster string) {
		peersManaged.WithLabelValues(mesh, cluster).Set(1)
		peerWrites.WithLabelValues(mesh, cluster, "apply").Inc()
		applyErrors.WithLabelValues(mesh, cluster).Inc()
	}
	series := newClusterSeries()
	for _, c := range []struct {
		name        string
		clusters    []string
		gone, there []string
	}{
		{"first pass", []string{"a", "b"}, nil, []string{"a", "b"}},
		{"b renamed c", []string{"a", "c"}, []string{"b"}, []string{"a", "c"}},
		{"a removed", []string{"c"}, []string{"a", "b"}, []string{"c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			series.keep(mesh, c.clusters)
			for _, cl := range c.clusters {
				set(mesh, cl)
			}
			set(other, "b")
			text := scrapeText(t, names)
			for _, n := range names {
				for _, cl := range c.gone {
					if strings.Contains(text, n+`{cluster="`+cl+`",mesh="`+mesh+`"`) {
						t.Errorf("%s of cluster %s still exposed:\n%s", n, cl, text)
					}
				}
				for _, cl := range c.there {
					if !strings.Contains(text, n+`{cluster="`+cl+`",mesh="`+mesh+`"`) {
						t.Errorf("%s of cluster %s dropped:\n%s", n, cl, text)
					}
				}
				if !strings.Contains(text, n+`{cluster="b",mesh="`+other+`"`) {
					t.Errorf("%s of another mesh dropped:\n%s", n, text)
				}
			}
		})
	}
	series.forget(mesh)
	forgetMeshMetrics(mesh)
	forgetMeshMetrics(other)
}

// scrapeText is the text exposition of the named metrics of the legacy
// registry, which /metrics serves.
func scrapeText(t *testing.T, names []string) string {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range families {
		if slices.Contains(names, f.GetName()) {
			if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.String()
}

// TestReportConditionsAndServices: a mesh has one condition series per
// condition, at its current status only; its services series count what
// does not work per cluster and go when services are not served. Each pass
// changes only its own mesh's series, and a replica that leads again
// exposes what it reports again.
func TestReportConditionsAndServices(t *testing.T) {
	registerMetrics()
	const mesh, other = "ns/report", "ns/other"
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue}
	notReady := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse}
	departed := metav1.Condition{Type: "DeparturesComplete", Status: metav1.ConditionTrue}
	departing := metav1.Condition{Type: "DeparturesComplete", Status: metav1.ConditionFalse}
	out := &services.Output{
		Clusters: []services.ClusterOutput{
			{Name: "a", Imports: []services.Import{{Name: "x"}, {Name: "y", Blocked: services.BlockedHostNamespaceNotGranted}}},
			{Name: "b"},
		},
		Exports: []services.ExportResult{
			{Cluster: "a", Name: "x", Conditions: []metav1.Condition{ready}},
			{Cluster: "b", Name: "y", Conditions: []metav1.Condition{notReady}},
			{Cluster: "b", Name: "z"},
		},
	}
	fixed := &services.Output{Clusters: out.Clusters[1:], Exports: out.Exports[:1]}
	s := newReportedSeries()
	s.reportConditions(other, []metav1.Condition{notReady})
	s.reportServices(other, &services.Output{Clusters: []services.ClusterOutput{{Name: "a"}}})
	names := []string{"kilo_mesh_condition", "kilo_mesh_services_not_ready"}
	otherSeries := []string{
		`kilo_mesh_condition{condition="Ready",mesh="ns/other",status="False"} 1`,
		`kilo_mesh_services_not_ready{cluster="a",kind="import",mesh="ns/other"} 0`,
	}
	for _, pass := range []struct {
		name      string
		conds     []metav1.Condition
		services  *services.Output
		reset     bool
		want, not []string
	}{
		{name: "first", conds: []metav1.Condition{notReady, departed}, services: out, want: []string{
			`kilo_mesh_condition{condition="Ready",mesh="ns/report",status="False"} 1`,
			`kilo_mesh_services_not_ready{cluster="a",kind="import",mesh="ns/report"} 1`,
			`kilo_mesh_services_not_ready{cluster="a",kind="export",mesh="ns/report"} 0`,
			`kilo_mesh_services_not_ready{cluster="b",kind="import",mesh="ns/report"} 0`,
			`kilo_mesh_services_not_ready{cluster="b",kind="export",mesh="ns/report"} 2`,
		}},
		{name: "statuses change", conds: []metav1.Condition{ready, departing}, services: out, want: []string{
			`kilo_mesh_condition{condition="Ready",mesh="ns/report",status="True"} 1`,
			`kilo_mesh_condition{condition="DeparturesComplete",mesh="ns/report",status="False"} 1`,
		}, not: []string{`condition="Ready",mesh="ns/report",status="False"`, `condition="DeparturesComplete",mesh="ns/report",status="True"`}},
		{name: "the same again", conds: []metav1.Condition{ready, departing}, services: out, want: []string{
			`kilo_mesh_condition{condition="Ready",mesh="ns/report",status="True"} 1`,
			`kilo_mesh_services_not_ready{cluster="b",kind="export",mesh="ns/report"} 2`,
		}},
		{name: "a replica leads again", reset: true, conds: []metav1.Condition{ready, departing}, services: out, want: []string{
			`kilo_mesh_condition{condition="Ready",mesh="ns/report",status="True"} 1`,
			`kilo_mesh_services_not_ready{cluster="b",kind="export",mesh="ns/report"} 2`,
		}},
		{name: "a cluster's services leave, others work", conds: []metav1.Condition{ready}, services: fixed, want: []string{
			`kilo_mesh_services_not_ready{cluster="b",kind="export",mesh="ns/report"} 0`,
		}, not: []string{`cluster="a",kind="import",mesh="ns/report"`, `condition="DeparturesComplete",mesh="ns/report"`}},
		{name: "services not served", conds: []metav1.Condition{ready}, not: []string{
			`kilo_mesh_services_not_ready{cluster="b",kind="export",mesh="ns/report"}`,
			`kilo_mesh_services_not_ready{cluster="b",kind="import",mesh="ns/report"}`,
			`kilo_mesh_services_not_ready{cluster="a",kind="export",mesh="ns/report"}`,
			`kilo_mesh_services_not_ready{cluster="a",kind="import",mesh="ns/report"}`,
		}},
	} {
		t.Run(pass.name, func(t *testing.T) {
			if pass.reset {
				s.reset()
				s.reportConditions(other, []metav1.Condition{notReady})
				s.reportServices(other, &services.Output{Clusters: []services.ClusterOutput{{Name: "a"}}})
			}
			s.reportConditions(mesh, pass.conds)
			s.reportServices(mesh, pass.services)
			got := scrapeText(t, names)
			for _, want := range append(pass.want, otherSeries...) {
				if !strings.Contains(got, want) {
					t.Errorf("no %s in:\n%s", want, got)
				}
			}
			for _, not := range pass.not {
				if strings.Contains(got, not) {
					t.Errorf("%s still exposed:\n%s", not, got)
				}
			}
		})
	}
	s.forget(mesh)
	got := scrapeText(t, names)
	if strings.Contains(got, "ns/report") {
		t.Errorf("a deleted mesh's series are still exposed:\n%s", got)
	}
	for _, want := range otherSeries {
		if !strings.Contains(got, want) {
			t.Errorf("forgetting a mesh dropped another's %s:\n%s", want, got)
		}
	}
	s.forget(other)
}

// BenchmarkReportPassSeries is what a pass costs the condition and
// services series of its mesh beside those of other meshes: the same at
// any number of meshes.
func BenchmarkReportPassSeries(b *testing.B) {
	registerMetrics()
	conds := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue}, {Type: "ClustersReachable", Status: metav1.ConditionTrue},
		{Type: "PeersApplied", Status: metav1.ConditionTrue}, {Type: "DeparturesComplete", Status: metav1.ConditionTrue},
	}
	for _, meshes := range []int{1, 1000} {
		b.Run(fmt.Sprintf("meshes=%d", meshes), func(b *testing.B) {
			s := newReportedSeries()
			name := func(i int) string { return fmt.Sprintf("ns-%d/mesh", i) }
			for i := range meshes {
				s.reportConditions(name(i), conds)
				s.reportServices(name(i), nil)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.reportConditions(name(0), conds)
				s.reportServices(name(0), nil)
			}
			b.StopTimer()
			for i := range meshes {
				s.forget(name(i))
			}
		})
	}
}
