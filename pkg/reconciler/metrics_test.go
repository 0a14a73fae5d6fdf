package reconciler

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"k8s.io/component-base/metrics/legacyregistry"
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
