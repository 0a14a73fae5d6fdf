package reconciler

import (
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
// does not work per cluster and go when services are not served.
func TestReportConditionsAndServices(t *testing.T) {
	registerMetrics()
	const mesh = "ns/report"
	reportConditions(mesh, []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}, {Type: "DeparturesComplete", Status: metav1.ConditionTrue}})
	reportConditions(mesh, []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}, {Type: "DeparturesComplete", Status: metav1.ConditionFalse}})
	got := scrapeText(t, []string{"kilo_mesh_condition"})
	for _, want := range []string{`kilo_mesh_condition{condition="Ready",mesh="ns/report",status="True"} 1`, `kilo_mesh_condition{condition="DeparturesComplete",mesh="ns/report",status="False"} 1`} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in:\n%s", want, got)
		}
	}
	if strings.Contains(got, `condition="Ready",mesh="ns/report",status="False"`) {
		t.Errorf("the former status is still exposed:\n%s", got)
	}

	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue}
	notReady := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse}
	reportServices(mesh, &services.Output{
		Clusters: []services.ClusterOutput{
			{Name: "a", Imports: []services.Import{{Name: "x"}, {Name: "y", Blocked: services.BlockedHostNamespaceNotGranted}}},
			{Name: "b"},
		},
		Exports: []services.ExportResult{
			{Cluster: "a", Name: "x", Conditions: []metav1.Condition{ready}},
			{Cluster: "b", Name: "y", Conditions: []metav1.Condition{notReady}},
			{Cluster: "b", Name: "z"},
		},
	})
	got = scrapeText(t, []string{"kilo_mesh_services_not_ready"})
	for _, want := range []string{
		`kilo_mesh_services_not_ready{cluster="a",kind="import",mesh="ns/report"} 1`,
		`kilo_mesh_services_not_ready{cluster="a",kind="export",mesh="ns/report"} 0`,
		`kilo_mesh_services_not_ready{cluster="b",kind="import",mesh="ns/report"} 0`,
		`kilo_mesh_services_not_ready{cluster="b",kind="export",mesh="ns/report"} 2`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in:\n%s", want, got)
		}
	}
	reportServices(mesh, nil)
	if got := scrapeText(t, []string{"kilo_mesh_services_not_ready"}); strings.Contains(got, "ns/report") {
		t.Errorf("services not served, series left:\n%s", got)
	}
	forgetMeshMetrics(mesh)
	if got := scrapeText(t, []string{"kilo_mesh_condition"}); strings.Contains(got, "ns/report") {
		t.Errorf("a deleted mesh's conditions are still exposed:\n%s", got)
	}
}
