package framework

import (
	"errors"
	"slices"
	"testing"
)

const scrape = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kilo.squat.ai",resource="peers",scope="cluster",subresource="",verb="LIST",version="v1alpha1"} 40
apiserver_request_total{code="201",component="apiserver",dry_run="",group="kilo.squat.ai",resource="peers",scope="cluster",subresource="",verb="POST",version="v1alpha1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kilo.squat.ai",resource="peers",scope="cluster",subresource="",verb="APPLY",version="v1alpha1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kilo.squat.ai",resource="peers",scope="cluster",subresource="",verb="DELETECOLLECTION",version="v1alpha1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="mesh.kilo.squat.ai",resource="clustermeshes",scope="namespace",subresource="status",verb="APPLY",version="v1alpha1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="namespace",subresource="",verb="GET",version="v1"} 9
# HELP kilo_mesh_reconcile_duration_seconds Time of one pass.
# TYPE kilo_mesh_reconcile_duration_seconds histogram
kilo_mesh_reconcile_duration_seconds_bucket{result="success",le="0.1"} 3
kilo_mesh_reconcile_duration_seconds_bucket{result="success",le="+Inf"} 4
kilo_mesh_reconcile_duration_seconds_sum{result="success"} 0.5
kilo_mesh_reconcile_duration_seconds_count{result="success"} 4
kilo_mesh_reconcile_duration_seconds_bucket{result="error",le="0.1"} 1
kilo_mesh_reconcile_duration_seconds_bucket{result="error",le="+Inf"} 1
kilo_mesh_reconcile_duration_seconds_sum{result="error"} 0.25
kilo_mesh_reconcile_duration_seconds_count{result="error"} 1
# TYPE kilo_mesh_queue_depth gauge
kilo_mesh_queue_depth 2
untyped_thing{a="b"} 7
`

func TestRequestWrites(t *testing.T) {
	for _, c := range []struct {
		group, resource string
		want            float64
		fails           bool
	}{
		{"kilo.squat.ai", "peers", 9, false},              // POST, APPLY, DELETECOLLECTION; not LIST
		{"mesh.kilo.squat.ai", "clustermeshes", 2, false}, // the status subresource counts
		{"coordination.k8s.io", "leases", 0, false},       // read, never written
		{"kilo.squat.ai", "peer", 0, true},                // a misspelt resource
		{"", "peers", 0, true},                            // the wrong group
	} {
		got, err := RequestWrites([]byte(scrape), c.group, c.resource)
		if (err != nil) != c.fails || got != c.want {
			t.Errorf("RequestWrites(%q, %q) = %v, %v; want %v, fails %v", c.group, c.resource, got, err, c.want, c.fails)
		}
	}
	if _, err := RequestWrites([]byte("# nothing\n"), "kilo.squat.ai", "peers"); !errors.Is(err, ErrNoSamples) {
		t.Errorf("without apiserver_request_total: %v, want ErrNoSamples", err)
	}
}

func TestMetricSum(t *testing.T) {
	for _, c := range []struct {
		name  string
		want  float64
		fails bool
	}{
		{"kilo_mesh_reconcile_duration_seconds_count", 5, false},
		{"kilo_mesh_reconcile_duration_seconds_sum", 0.75, false},
		{"kilo_mesh_queue_depth", 2, false},
		{"untyped_thing", 7, false},
		{"kilo_mesh_reconcile_duration_seconds", 0, true}, // a histogram: which figure?
		{"kilo_mesh_peer_writes_total", 0, true},          // absent
	} {
		got, err := MetricSum([]byte(scrape), c.name)
		if (err != nil) != c.fails || got != c.want {
			t.Errorf("MetricSum(%q) = %v, %v; want %v, fails %v", c.name, got, err, c.want, c.fails)
		}
	}
	if _, err := MetricSum([]byte(scrape), "absent_total"); !errors.Is(err, ErrNoSamples) {
		t.Errorf("absent metric: %v, want ErrNoSamples", err)
	}
	if _, err := MetricSum([]byte("broken{ 1\n"), "broken"); err == nil || errors.Is(err, ErrNoSamples) {
		t.Errorf("unparsable scrape: %v, want a parse error", err)
	}
}

func TestPromQLMetrics(t *testing.T) {
	for expr, want := range map[string][]string{
		`kilo_mesh_cluster_reachable == 0`: {"kilo_mesh_cluster_reachable"},
		`sum by (mesh, cluster) (increase(kilo_mesh_apply_errors_total{job=~"$job"}[10m])) > 0`: {"kilo_mesh_apply_errors_total"},
		`histogram_quantile(0.95, sum by (le) (rate(x_bucket{a="b,c"}[5m])))`:                   {"x_bucket"},
		`count(a != b) or vector(0)`: {"a", "b"},
		`m - time() < 14 * 86400`:    {"m"},
	} {
		if got := PromQLMetrics(expr); !slices.Equal(got, want) {
			t.Errorf("PromQLMetrics(%q) = %v, want %v", expr, got, want)
		}
	}
	names, err := MonitoringMetrics()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "kilo_mesh_cluster_reachable") {
		t.Errorf("the chart's monitoring files query %v, without kilo_mesh_cluster_reachable", names)
	}
}
