package clusters

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// FilterWatch passes w's events through f, as watch.Filter does, but its
// goroutine ends when the watch is stopped, also while it holds an event
// that nobody reads any more; Stop returns once it has. watch.Filter's
// goroutine then waits for a reader for ever, keeping the event: a
// reflector stops reading before it stops its watch, on every error (a
// member going over its limits among them) and when its cache stops.
func FilterWatch(w watch.Interface, f watch.FilterFunc) watch.Interface {
	fw := &filteredWatch{incoming: w, result: make(chan watch.Event), stopping: make(chan struct{}), ended: make(chan struct{})}
	go fw.loop(f)
	return fw
}

type filteredWatch struct {
	incoming watch.Interface
	result   chan watch.Event
	// stopping is closed by Stop, ended when the loop has returned.
	stopping, ended chan struct{}
	stopOnce        sync.Once
}

func (fw *filteredWatch) ResultChan() <-chan watch.Event { return fw.result }

func (fw *filteredWatch) Stop() {
	fw.stopOnce.Do(func() { close(fw.stopping) })
	fw.incoming.Stop()
	<-fw.ended
}

func (fw *filteredWatch) loop(f watch.FilterFunc) {
	defer close(fw.ended)
	defer close(fw.result)
	for {
		select {
		case <-fw.stopping:
			return
		case e, ok := <-fw.incoming.ResultChan():
			if !ok {
				return
			}
			e, keep := f(e)
			if !keep {
				continue
			}
			select {
			case fw.result <- e:
			case <-fw.stopping:
				return
			}
		}
	}
}
