package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// writeVerbs are the verbs of apiserver_request_total that write.
var writeVerbs = []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}

// Scrape reads /metrics of the API server cfg points at (a kube-apiserver
// or the mesh server).
func Scrape(ctx context.Context, cfg *rest.Config) ([]byte, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics of %s: %w", cfg.Host, err)
	}
	return raw, nil
}

// RequestWrites sums the write requests (every verb that writes, any
// subresource) an API server served for a resource of group, from
// apiserver_request_total in a scrape. It fails when the scrape holds no
// sample of that counter for the resource, whatever the verb: every
// resource a test counts is also read or watched, so a wrong group or
// resource name must not read as "no writes".
func RequestWrites(scrape []byte, group, resource string) (float64, error) {
	all, err := samples(scrape, "apiserver_request_total")
	if err != nil {
		return 0, err
	}
	found := false
	var sum float64
	for _, s := range all {
		if s.labels["group"] != group || s.labels["resource"] != resource {
			continue
		}
		found = true
		if slices.Contains(writeVerbs, s.labels["verb"]) {
			sum += s.value
		}
	}
	if !found {
		return 0, fmt.Errorf("no apiserver_request_total sample for resource %q of group %q", resource, group)
	}
	return sum, nil
}

// MetricSum sums the samples of a metric in a scrape, whatever their
// labels; the _count and _sum of a histogram or summary count as metrics.
// It fails when the scrape holds no sample of the metric: a misspelt name
// must not read as zero. A labelled counter has no sample until its first
// increment; a test expecting none must check for ErrNoSamples itself.
func MetricSum(scrape []byte, name string) (float64, error) {
	all, err := samples(scrape, name)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, s := range all {
		sum += s.value
	}
	return sum, nil
}

// ErrNoSamples is returned when a scrape holds no sample of a metric.
var ErrNoSamples = errors.New("no sample in the scrape")

type sample struct {
	labels map[string]string
	value  float64
}

// samples parses a scrape in the Prometheus text format and returns the
// samples of the metric name.
func samples(scrape []byte, name string) ([]sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(scrape))
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	var out []sample
	add := func(m *dto.Metric, v float64) {
		labels := make(map[string]string, len(m.GetLabel()))
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out = append(out, sample{labels: labels, value: v})
	}
	if f := families[name]; f != nil {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(m, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(m, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(m, m.GetUntyped().GetValue())
			default:
				return nil, fmt.Errorf("%s is a %s: ask for its _count or _sum", name, f.GetType())
			}
		}
	}
	// The parser folds a histogram's or summary's _count and _sum into it.
	for _, suffix := range []string{"_count", "_sum"} {
		base, ok := strings.CutSuffix(name, suffix)
		f := families[base]
		if !ok || f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			switch {
			case f.GetType() == dto.MetricType_HISTOGRAM && suffix == "_count":
				add(m, float64(m.GetHistogram().GetSampleCount()))
			case f.GetType() == dto.MetricType_HISTOGRAM:
				add(m, m.GetHistogram().GetSampleSum())
			case f.GetType() == dto.MetricType_SUMMARY && suffix == "_count":
				add(m, float64(m.GetSummary().GetSampleCount()))
			case f.GetType() == dto.MetricType_SUMMARY:
				add(m, m.GetSummary().GetSampleSum())
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrNoSamples)
	}
	return out, nil
}

// MetricSeries returns the labels of every sample of a metric in a scrape;
// like MetricSum, it fails with ErrNoSamples when there is none.
func MetricSeries(scrape []byte, name string) ([]map[string]string, error) {
	all, err := samples(scrape, name)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]string, len(all))
	for i, s := range all {
		out[i] = s.labels
	}
	return out, nil
}

// MetricSumWhere sums the samples of a metric whose labels include match;
// like MetricSum, it fails with ErrNoSamples when no sample matches.
func MetricSumWhere(scrape []byte, name string, match map[string]string) (float64, error) {
	all, err := samples(scrape, name)
	if err != nil {
		return 0, err
	}
	var sum float64
	found := false
	for _, s := range all {
		ok := true
		for k, v := range match {
			ok = ok && s.labels[k] == v
		}
		if ok {
			sum += s.value
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("%s%v: %w", name, match, ErrNoSamples)
	}
	return sum, nil
}
