package planner

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// incrementalSequences and incrementalSteps size the property: thousands of
// sequences, each a random mesh and a few dozen changes.
const (
	incrementalSequences = 2000
	incrementalSteps     = 12
)

// TestPropertyIncrementalEqualsWhole drives random sequences of changes
// through Next and through Compute and requires the very same Plan after
// every step: the same Peers, reasons, messages and WireGuard IPs. Set
// INCREMENTAL_SEED to run one sequence again; a failure prints its seed and
// the shortest sequence of its steps that still fails.
func TestPropertyIncrementalEqualsWhole(t *testing.T) {
	first, last := int64(0), int64(incrementalSequences)
	if s := os.Getenv("INCREMENTAL_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("INCREMENTAL_SEED=%q: %v", s, err)
		}
		first, last = seed, seed+1
	}
	var steps, patched int
	for seed := first; seed < last; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := sequenceMesh(r)
		seq := drawSteps(r, incrementalSteps)
		n, p, failure := runSequence(in, seq)
		steps, patched = steps+n, patched+p
		if failure == "" {
			continue
		}
		minimal := shrink(in, seq)
		_, _, why := runSequence(in, minimal)
		t.Fatalf("seed %d (INCREMENTAL_SEED=%d): incremental and whole plans differ\nsequence: %v\nshortest failing sequence: %v\n%s",
			seed, seed, seq, minimal, why)
	}
	t.Logf("%d steps, %d of them patched rather than planned whole", steps, patched)
	// A property that never takes the incremental path proves nothing.
	if first == 0 && patched < steps/4 {
		t.Errorf("only %d of %d steps were patched: the sequences do not reach incremental planning", patched, steps)
	}
}

// runSequence applies the steps one by one and compares the plans after
// each; it returns how many steps ran, how many Next patched, and the
// first difference, "" when there is none.
func runSequence(in Input, seq []step) (steps, patched int, failure string) {
	_, st, err := Start(in)
	if err != nil {
		return 0, 0, fmt.Sprintf("first plan: %v", err)
	}
	for i, s := range seq {
		in = stepKinds[s.kind].apply(rand.New(rand.NewSource(s.seed)), in)
		want, wantErr := Compute(in)
		var got *Plan
		var whole bool
		if st == nil {
			got, st, err = Start(in)
			whole = true
		} else {
			got, st, whole, err = st.Next(in, st.Diff(&in))
		}
		steps++
		if !whole {
			patched++
		}
		switch {
		case (err == nil) != (wantErr == nil):
			return steps, patched, fmt.Sprintf("after step %d (%v): error %v, whole planner's %v", i, s, err, wantErr)
		case err != nil:
			continue
		}
		// A patched plan's check-in expiry is the earliest seen, never
		// later than the whole plan's: check-ins are not reported.
		if !want.CheckInExpiry.IsZero() && (got.CheckInExpiry.IsZero() || got.CheckInExpiry.After(want.CheckInExpiry)) {
			return steps, patched, fmt.Sprintf("after step %d (%v, patched: %v): check-in expiry %v, later than the whole plan's %v", i, s, !whole, got.CheckInExpiry, want.CheckInExpiry)
		}
		same := *got
		same.CheckInExpiry = want.CheckInExpiry
		if !reflect.DeepEqual(&same, want) {
			return steps, patched, fmt.Sprintf("after step %d (%v, patched: %v):\n%s", i, s, !whole, planDifference(&same, want))
		}
	}
	return steps, patched, ""
}

// shrink removes steps from a failing sequence for as long as it still
// fails, one at a time.
func shrink(in Input, seq []step) []step {
	for removed := true; removed; {
		removed = false
		for i := range seq {
			shorter := append(append([]step(nil), seq[:i]...), seq[i+1:]...)
			if _, _, f := runSequence(in, shorter); f != "" {
				seq, removed = shorter, true
				break
			}
		}
	}
	return seq
}

// planDifference names the first part of two plans that differs and shows
// where its JSON does.
func planDifference(got, want *Plan) string {
	parts := []struct {
		name      string
		got, want any
	}{
		{"View.Clusters", got.View.Clusters, want.View.Clusters},
		{"View.Targets", got.View.Targets, want.View.Targets},
		{"View.Conflicts", got.View.Conflicts, want.View.Conflicts},
		{"View.Warnings", got.View.Warnings, want.View.Warnings},
		{"DesiredPeers", got.DesiredPeers, want.DesiredPeers},
		{"ServicesYielded", got.ServicesYielded, want.ServicesYielded},
		{"View", got.View, want.View},
	}
	for _, p := range parts {
		if reflect.DeepEqual(p.got, p.want) {
			continue
		}
		a, _ := json.Marshal(p.got)
		b, _ := json.Marshal(p.want)
		if string(a) == string(b) {
			return p.name + " differ only where JSON cannot tell (nil against empty lists)"
		}
		return p.name + " differ:\n" + strings.ReplaceAll(firstDifference(a, b), "want", "whole")
	}
	return "the plans differ"
}

// TestNextPlansWholeWhenUnsure: changes that do not match the last plan's
// input, or that Next cannot pin down, are planned whole, never guessed.
func TestNextPlansWholeWhenUnsure(t *testing.T) {
	base := benchInput(3, 2, "full")
	stranger := node(t, base, "cluster-01", "cluster-01-node-00000").DeepCopy()
	for _, tc := range []struct {
		name   string
		in     func(Input) Input
		change func(Input) Changes
		shift  time.Duration // of the clock between the two plans
	}{
		{"a cluster the mesh does not list", func(in Input) Input { return in },
			func(in Input) Changes {
				return Changes{Nodes: []NodeChange{{Cluster: "nowhere", Old: stranger, New: stranger}}}
			}, 0},
		{"a node object the last plan did not read", func(in Input) Input { return in },
			func(in Input) Changes {
				return Changes{Nodes: []NodeChange{{Cluster: "cluster-01", Old: stranger, New: in.Clusters["cluster-01"].Nodes.Slice()[0]}}}
			}, 0},
		{"a cluster without nodes", func(in Input) Input {
			return withSnapshot(in, "cluster-02", ClusterSnapshot{Reachable: true})
		}, func(in Input) Changes {
			return Changes{Nodes: []NodeChange{{Cluster: "cluster-02", Old: stranger, New: stranger}}}
		}, 0},
		{"the clock going back", func(in Input) Input { return in },
			func(Input) Changes { return Changes{} }, -time.Second},
		{"a Peer the last plan did not read", func(in Input) Input { return in },
			func(in Input) Changes {
				p := in.Clusters["cluster-00"].Peers.Slice()[0]
				return Changes{Peers: []PeerChange{{Cluster: "cluster-00", Old: p.DeepCopy(), New: p}}}
			}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(base)
			first := mustCompute(t, in)
			in = withPeers(in, first)
			_, st, err := Start(in)
			if err != nil {
				t.Fatal(err)
			}
			in.Now = in.Now.Add(tc.shift)
			got, _, whole, err := st.Next(in, tc.change(in))
			if err != nil {
				t.Fatal(err)
			}
			if !whole {
				t.Error("patched, want a whole plan")
			}
			if want := mustCompute(t, in); !reflect.DeepEqual(got, want) {
				t.Errorf("differs from the whole plan:\n%s", planDifference(got, want))
			}
		})
	}
}
