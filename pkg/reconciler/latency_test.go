package reconciler

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/legacyregistry"
)

// TestChangeClock: a pass takes the changes reported since the previous
// pass started, timed from the first; those reported during the pass
// belong to the next one.
func TestChangeClock(t *testing.T) {
	at := time.Unix(1000, 0)
	c := newChangeClock()
	c.now = func() time.Time { return at }
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}

	c.note(a)
	at = at.Add(time.Second)
	c.note(a)
	c.note(b)
	got, ok := c.take(a)
	if want := (pendingChange{id: 1, first: time.Unix(1000, 0), count: 2}); !ok || got != want {
		t.Errorf("first pass of a: got %+v, %v, want %+v", got, ok, want)
	}
	if got, ok := c.take(a); ok {
		t.Errorf("a second pass of a took %+v, want nothing: no change since the first started", got)
	}
	c.note(a)
	if got, ok := c.take(a); !ok || got.id != 4 || got.count != 1 || !got.first.Equal(at) {
		t.Errorf("a change during the pass: got %+v, %v, want id 4, one change, at %s", got, ok, at)
	}
	c.forget(b)
	if got, ok := c.take(b); ok {
		t.Errorf("a forgotten mesh took %+v", got)
	}
}

// TestPassTraceStages: each stage is observed from the pass's own times,
// the latest target's writes ending the written stage, and a pass that
// writes nothing stops at planned.
func TestPassTraceStages(t *testing.T) {
	registerMetrics()
	start := time.Unix(2000, 0)
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }
	for _, c := range []struct {
		name    string
		trace   passTrace
		results []targetResult
		end     time.Time
		want    map[string]float64 // stage -> seconds observed
	}{
		{
			name:  "a change written on two targets",
			trace: passTrace{changed: true, change: pendingChange{id: 7, first: ms(-5), count: 1}, start: start, planned: ms(20)},
			results: []targetResult{
				{writes: 1, handed: ms(22), answered: ms(30)},
				{writes: 2, handed: ms(25), answered: ms(40)},
				{}, // a target with nothing to write
			},
			end:  ms(41),
			want: map[string]float64{StageQueued: 0.005, StagePlanned: 0.020, StageDiffed: 0.005, StageWritten: 0.015, StageRecorded: 0.001},
		},
		{
			name:  "a timer's pass that writes nothing",
			trace: passTrace{start: start, planned: ms(3)},
			end:   ms(4),
			want:  map[string]float64{StagePlanned: 0.003},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := stageSums(t)
			for _, r := range c.results {
				c.trace.wrote(r)
			}
			c.trace.finish(types.NamespacedName{Namespace: "ns", Name: "m"}, c.end, "success")
			after := stageSums(t)
			for _, s := range []string{StageQueued, StagePlanned, StageDiffed, StageWritten, StageRecorded, StageConfirmed} {
				gotCount := after[s].count - before[s].count
				gotSum := after[s].sum - before[s].sum
				want, observed := c.want[s]
				switch {
				case observed && (gotCount != 1 || !near(gotSum, want)):
					t.Errorf("stage %s: %d observations summing %.4fs, want one of %.4fs", s, gotCount, gotSum, want)
				case !observed && gotCount != 0:
					t.Errorf("stage %s: %d observations, want none", s, gotCount)
				}
			}
		})
	}
}

type histogramSum struct {
	count uint64
	sum   float64
}

// stageSums reads kilo_mesh_change_stage_duration_seconds by stage.
func stageSums(t *testing.T) map[string]histogramSum {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]histogramSum{}
	for _, f := range families {
		if f.GetName() != "kilo_mesh_change_stage_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			out[stageOf(m)] = histogramSum{count: m.GetHistogram().GetSampleCount(), sum: m.GetHistogram().GetSampleSum()}
		}
	}
	return out
}

func stageOf(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == "stage" {
			return l.GetValue()
		}
	}
	return ""
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
