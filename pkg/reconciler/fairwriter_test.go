package reconciler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestFairWriter: with every slot of a connection busy, the writes waiting
// start in turns between namespaces, then between the meshes of a
// namespace, each mesh's in order; another connection never waits for
// them; every write runs.
func TestFairWriter(t *testing.T) {
	type batch struct {
		conn, ns, mesh string
		n              int
	}
	for _, c := range []struct {
		name    string
		waiting []batch
		// want is the order the waiting writes start in, as ns/mesh.
		want []string
	}{
		{
			name:    "a small change of another namespace waits for one write of the large pass",
			waiting: []batch{{"host", "a", "big", 5}, {"host", "b", "small", 1}},
			want:    []string{"a/big", "b/small", "a/big", "a/big", "a/big", "a/big"},
		},
		{
			name:    "namespaces take turns, then their meshes",
			waiting: []batch{{"host", "a", "m1", 3}, {"host", "a", "m2", 3}, {"host", "b", "m", 3}},
			want:    []string{"a/m1", "b/m", "a/m2", "b/m", "a/m1", "b/m", "a/m2", "a/m1", "a/m2"},
		},
		{
			name:    "many meshes of one namespace get one turn between them",
			waiting: []batch{{"host", "a", "m1", 2}, {"host", "a", "m2", 2}, {"host", "a", "m3", 2}, {"host", "a", "m4", 2}, {"host", "b", "m", 2}},
			want:    []string{"a/m1", "b/m", "a/m2", "b/m", "a/m3", "a/m4", "a/m1", "a/m2", "a/m3", "a/m4"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newFairWriter()
			started := make(chan string, 1)
			release := make(chan struct{})
			write := func(label string) func() {
				return func() {
					started <- label
					<-release
				}
			}
			// Every slot of the connection busy with writes of a namespace
			// that has nothing else waiting.
			for i := range writeParallelism {
				w.submit("host", types.NamespacedName{Namespace: "first", Name: "m"}, write(fmt.Sprintf("busy-%d", i)))
				<-started
			}
			for _, b := range c.waiting {
				for i := range b.n {
					w.submit(b.conn, types.NamespacedName{Namespace: b.ns, Name: b.mesh}, write(fmt.Sprintf("%s/%s#%d", b.ns, b.mesh, i)))
				}
			}
			// Another connection is not held up by the busy one.
			done := make(chan struct{})
			w.submit("member", types.NamespacedName{Namespace: "a", Name: "big"}, func() { close(done) })
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a write to another connection waited for the busy one")
			}

			var got []string
			next := map[string]int{}
			for range c.want {
				release <- struct{}{}
				label := <-started
				mesh, n, _ := strings.Cut(label, "#")
				if want := fmt.Sprint(next[mesh]); n != want {
					t.Errorf("%s started write %s of the mesh before %s", label, n, want)
				}
				next[mesh]++
				got = append(got, mesh)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("writes started in the order\n%v, want\n%v", got, c.want)
			}
			close(release)
			deadline := time.After(10 * time.Second)
			for {
				w.mu.Lock()
				idle := len(w.conns) == 0
				w.mu.Unlock()
				if idle {
					break
				}
				select {
				case <-deadline:
					t.Fatal("writes still running or waiting after every write was released")
				case <-time.After(time.Millisecond):
				}
			}
		})
	}
}
