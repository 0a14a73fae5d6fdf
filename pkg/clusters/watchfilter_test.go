package clusters

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestFilterWatch(t *testing.T) {
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	keepA := func(e watch.Event) (watch.Event, bool) { return e, e.Object.(*corev1.Node).Name == "a" }
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, in *watch.FakeWatcher, out watch.Interface)
	}{
		{"events pass through the filter", func(t *testing.T, in *watch.FakeWatcher, out watch.Interface) {
			go func() {
				in.Add(node("b"))
				in.Add(node("a"))
			}()
			if e := receive(t, out); e.Object.(*corev1.Node).Name != "a" {
				t.Errorf("got %s, want only a", e.Object.(*corev1.Node).Name)
			}
			out.Stop()
		}},
		{"the end of the watch ends the result", func(t *testing.T, in *watch.FakeWatcher, out watch.Interface) {
			in.Stop()
			if e, ok := <-out.ResultChan(); ok {
				t.Errorf("got a %s event after the watch ended", e.Type)
			}
		}},
		{"stopped while holding an event nobody reads, it ends", func(t *testing.T, in *watch.FakeWatcher, out watch.Interface) {
			// Add returns once the filter holds the event.
			in.Add(node("a"))
			stopped := make(chan struct{})
			go func() {
				out.Stop()
				close(stopped)
			}()
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatal("Stop did not return: the filter waits for a reader")
			}
			if e, ok := <-out.ResultChan(); ok {
				t.Errorf("got a %s event after Stop returned", e.Type)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := watch.NewFake()
			tc.run(t, in, FilterWatch(in, keepA))
		})
	}
}

func receive(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the result closed")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return watch.Event{}
}
