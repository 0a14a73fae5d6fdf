package reconciler

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestDepartedHereBounded: a tenant editing entries in and out of a mesh
// grows the memory of completed departures by at most
// maxDepartedRemembered per mesh, the oldest going first; what the status
// no longer shows is dropped at once.
func TestDepartedHereBounded(t *testing.T) {
	key := types.NamespacedName{Namespace: "tenant", Name: "demo"}
	start := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		completed int
		keep      []string // nil: keep is not called
		want      []string // remembered afterwards
		notWant   []string
		size      int
		forgotten int
	}{
		{name: "under the bound", completed: 3, want: []string{"e0", "e1", "e2"}, size: 3},
		{name: "at the bound", completed: maxDepartedRemembered, want: []string{"e0", fmt.Sprintf("e%d", maxDepartedRemembered-1)}, size: maxDepartedRemembered},
		{name: "past the bound the oldest go", completed: maxDepartedRemembered + 10,
			want: []string{"e10", fmt.Sprintf("e%d", maxDepartedRemembered+9)}, notWant: []string{"e0", "e9"},
			size: maxDepartedRemembered, forgotten: 10},
		{name: "what the status no longer shows is dropped", completed: 5, keep: []string{"e1", "e4"},
			want: []string{"e1", "e4"}, notWant: []string{"e0", "e2", "e3"}, size: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d departedHere
			for i := range tt.completed {
				d.set(key, fmt.Sprintf("e%d", i), "uid", true, start.Add(time.Duration(i)*time.Second))
			}
			if tt.keep != nil {
				names := map[string]bool{}
				for _, n := range tt.keep {
					names[n] = true
				}
				d.keep(key, names)
			}
			for _, n := range tt.want {
				if !d.has(key, n, "uid") {
					t.Errorf("%s forgotten", n)
				}
			}
			for _, n := range tt.notWant {
				if d.has(key, n, "uid") {
					t.Errorf("%s still remembered", n)
				}
			}
			if got := len(d.done[key]); got != tt.size {
				t.Errorf("%d remembered, want %d", got, tt.size)
			}
			if d.forgotten != tt.forgotten {
				t.Errorf("forgotten = %d, want %d", d.forgotten, tt.forgotten)
			}
			if d.has(key, "e1", "another-uid") {
				t.Error("a departure of another mesh of the same name is taken for this one's")
			}
		})
	}
}
