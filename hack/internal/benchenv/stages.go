package benchenv

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The server's latency budget (pkg/reconciler's Stage constants).
const (
	stageMetric   = "kilo_mesh_change_stage_duration_seconds"
	changeMetric  = "kilo_mesh_change_to_write_seconds"
	passMetric    = "kilo_mesh_reconcile_duration_seconds"
	stageLabel    = "stage"
	noStageLabels = ""
)

var stages = []string{"queued", "planned", "diffed", "written", "recorded", "confirmed"}

// histogram is a histogram's samples between two scrapes: cumulative
// counts by upper bound.
type histogram struct {
	count  float64
	sum    float64
	bounds []float64
	counts []float64
}

// histograms reads the histograms of a family from a scrape, by the value
// of label ("" for an unlabelled histogram, or to add all series up).
func histograms(scrape []byte, family, label string) (map[string]histogram, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(scrape))
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	out := map[string]histogram{}
	f := families[family]
	if f == nil {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				key = l.GetValue()
			}
		}
		out[key] = add(out[key], m.GetHistogram())
	}
	return out, nil
}

func add(h histogram, p *dto.Histogram) histogram {
	if h.bounds == nil {
		for _, b := range p.GetBucket() {
			h.bounds = append(h.bounds, b.GetUpperBound())
		}
		h.counts = make([]float64, len(h.bounds))
	}
	h.count += float64(p.GetSampleCount())
	h.sum += p.GetSampleSum()
	for i, b := range p.GetBucket() {
		h.counts[i] += float64(b.GetCumulativeCount())
	}
	return h
}

// since is h minus what an earlier scrape held.
func (h histogram) since(before histogram) histogram {
	out := histogram{count: h.count - before.count, sum: h.sum - before.sum, bounds: h.bounds, counts: make([]float64, len(h.counts))}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(before.counts) {
			out.counts[i] -= before.counts[i]
		}
	}
	return out
}

// quantile is the upper bound of the bucket holding quantile q: the figure
// is at most that.
func (h histogram) quantile(q float64) float64 {
	rank := q * h.count
	i := sort.Search(len(h.counts), func(i int) bool { return h.counts[i] >= rank })
	if i == len(h.bounds) {
		return math.Inf(1)
	}
	return h.bounds[i]
}

func seconds(s float64) string {
	if math.IsInf(s, 1) {
		return "more"
	}
	return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond).String()
}

// Budget prints where the server's passes spent their time between two
// scrapes: per stage, the passes, the mean, and the bucket bounds holding
// the median and the 99th percentile.
func Budget(title string, before, after []byte) error {
	b, err := histograms(before, stageMetric, stageLabel)
	if err != nil {
		return err
	}
	a, err := histograms(after, stageMetric, stageLabel)
	if err != nil {
		return err
	}
	cb, err := histograms(before, changeMetric, noStageLabels)
	if err != nil {
		return err
	}
	ca, err := histograms(after, changeMetric, noStageLabels)
	if err != nil {
		return err
	}
	pb, err := histograms(before, passMetric, noStageLabels)
	if err != nil {
		return err
	}
	pa, err := histograms(after, passMetric, noStageLabels)
	if err != nil {
		return err
	}
	fmt.Printf("\nserver's latency budget, %s (p50 and p99 are bucket bounds: at most)\n", title)
	fmt.Printf("| stage | passes (confirmed: writes) | mean | p50 | p99 |\n|---|---:|---:|---:|---:|\n")
	row := func(name string, h histogram) {
		if h.count == 0 {
			fmt.Printf("| %s | 0 | | | |\n", name)
			return
		}
		fmt.Printf("| %s | %.0f | %s | %s | %s |\n", name, h.count, seconds(h.sum/h.count), seconds(h.quantile(0.5)), seconds(h.quantile(0.99)))
	}
	for _, s := range stages {
		row(s, a[s].since(b[s]))
	}
	row("change reported -> last write answered", ca[""].since(cb[""]))
	row("whole pass (reconcile_duration)", pa[""].since(pb[""]))
	return nil
}
