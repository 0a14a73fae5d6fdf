package reconciler

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// fairWriter runs every Peer write of the reconciler: at most
// writeParallelism at once on each connection, and, when more wait, in
// turns between the namespaces that have writes waiting and, within a
// namespace, between its meshes. A write of one mesh so waits for one
// write of each other namespace at most, never for another mesh's whole
// pass: the connection's client, and its rate limit, are shared fairly
// rather than first come, first served.
type fairWriter struct {
	mu    sync.Mutex
	conns map[string]*connWrites
}

// connWrites are the writes of one connection: how many run, and those
// waiting, by namespace, then by mesh, each mesh's in the order they came.
type connWrites struct {
	running int
	waiting turns[string, *turns[string, *[]func()]]
}

func newFairWriter() *fairWriter {
	return &fairWriter{conns: map[string]*connWrites{}}
}

// submit runs write on conn once it is mesh's turn there; it does not
// wait for it.
func (w *fairWriter) submit(conn string, mesh types.NamespacedName, write func()) {
	w.mu.Lock()
	c := w.conns[conn]
	if c == nil {
		c = &connWrites{}
		w.conns[conn] = c
	}
	if c.running < writeParallelism {
		c.running++
		w.mu.Unlock()
		go w.run(conn, write)
		return
	}
	meshes := c.waiting.at(mesh.Namespace, func() *turns[string, *[]func()] { return &turns[string, *[]func()]{} })
	q := meshes.at(mesh.Name, func() *[]func() { return &[]func(){} })
	*q = append(*q, write)
	w.mu.Unlock()
}

// run runs write, then the writes whose turn it is on conn, until none
// waits.
func (w *fairWriter) run(conn string, write func()) {
	for write != nil {
		write()
		write = w.next(conn)
	}
}

// next takes the write whose turn it is on conn, nil when none waits.
func (w *fairWriter) next(conn string) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.conns[conn]
	ns, meshes, ok := c.waiting.next()
	if !ok {
		if c.running--; c.running == 0 {
			delete(w.conns, conn)
		}
		return nil
	}
	mesh, q, _ := meshes.next()
	write := (*q)[0]
	(*q)[0] = nil
	if *q = (*q)[1:]; len(*q) == 0 {
		meshes.drop(mesh)
	}
	if meshes.empty() {
		c.waiting.drop(ns)
	}
	return write
}

// turns is a round robin of queues by key: next returns the queue of the
// key whose turn it is, and that key's turn comes again once every other
// key has had one. A key whose queue empties is dropped.
type turns[K comparable, Q any] struct {
	order  []K // the next turn first
	queues map[K]Q
}

// at returns the queue of k, made by newQueue when k has none.
func (t *turns[K, Q]) at(k K, newQueue func() Q) Q {
	if q, ok := t.queues[k]; ok {
		return q
	}
	if t.queues == nil {
		t.queues = map[K]Q{}
	}
	q := newQueue()
	t.queues[k] = q
	t.order = append(t.order, k)
	return q
}

// next returns the key whose turn it is and its queue, and moves the key
// to the end of the turns.
func (t *turns[K, Q]) next() (K, Q, bool) {
	if len(t.order) == 0 {
		var k K
		var q Q
		return k, q, false
	}
	k := t.order[0]
	t.order = append(t.order[1:], k)
	return k, t.queues[k], true
}

func (t *turns[K, Q]) drop(k K) {
	delete(t.queues, k)
	t.order = slices.DeleteFunc(t.order, func(o K) bool { return o == k })
}

func (t *turns[K, Q]) empty() bool { return len(t.order) == 0 }

// workerKey holds, in a pass's context, the function that gives its
// worker up.
type workerKey struct{}

// releaseWorker gives up the worker of the pass ctx belongs to; the pass
// goes on without one. Calling it again does nothing.
func releaseWorker(ctx context.Context) {
	if release, ok := ctx.Value(workerKey{}).(func()); ok {
		release()
	}
}
