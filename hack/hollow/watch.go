package hollow

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
)

const (
	// bookmarkEvery is how often a watch that allows bookmarks gets one,
	// as a kube-apiserver's watch cache sends them.
	bookmarkEvery = time.Minute
	// watchQueueMax is how far a watch may fall behind before it is
	// closed, as a kube-apiserver closes an unresponsive watcher; the
	// client resumes from its last resourceVersion.
	watchQueueMax = 100 * 1024
	// minWatchTimeout is the shortest time a watch without timeoutSeconds
	// runs (a kube-apiserver's --min-request-timeout): between it and twice it.
	minWatchTimeout = 30 * time.Minute
)

// watcher is one watch: the events of its resource that its selectors
// match, queued until its stream writes them.
type watcher struct {
	res    *resource
	from   uint64 // events up to it are not the watch's
	match  func(*stored) bool
	mu     sync.Mutex
	queue  []queued
	behind bool
	signal chan struct{}
}

type queued struct {
	typ watch.EventType
	obj *stored
}

// offer queues what ev means to the watch: an object that starts or stops
// matching its selectors is added or deleted for it, as in a kube-apiserver.
func (w *watcher) offer(ev event) {
	if ev.res != w.res || ev.rv <= w.from {
		return
	}
	was := ev.prev != nil && w.match(ev.prev)
	is := ev.typ != watch.Deleted && w.match(ev.obj)
	typ := ev.typ
	switch {
	case ev.typ == watch.Deleted:
		if !was {
			return
		}
	case is && !was:
		typ = watch.Added
	case was && !is:
		typ = watch.Deleted
	case !is:
		return
	}
	w.push(queued{typ: typ, obj: ev.obj})
}

func (w *watcher) push(q queued) {
	w.mu.Lock()
	if len(w.queue) >= watchQueueMax {
		w.behind = true
	} else {
		w.queue = append(w.queue, q)
	}
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// take returns the queued events, and whether the watch fell behind.
func (w *watcher) take() ([]queued, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queue
	w.queue = nil
	return q, w.behind
}

// serveWatch streams the events of res from the resourceVersion asked for:
// from one the history no longer holds, a single 410 Gone error event; with
// none (or "0"), every matching object as added first; from one ahead of
// the member, whatever comes once it gets there.
func (m *Member) serveWatch(rw http.ResponseWriter, r *http.Request, res *resource, q *query) {
	md := negotiate(r, res)
	w := &watcher{res: res, from: q.rv, match: q.match, signal: make(chan struct{}, 1)}
	s := m.store
	s.mu.Lock()
	if q.rv != 0 && q.rv < s.oldest {
		oldest := s.oldest
		s.mu.Unlock()
		m.streamHeader(rw, md)
		status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", q.rv, oldest)).Status()
		status.APIVersion, status.Kind = "v1", "Status"
		m.writeEvent(rw, md, watch.Error, &stored{obj: &status})
		return
	}
	if q.rv == 0 || q.initialEvents {
		for _, o := range sortedObjects(s.objects[res]) {
			if w.match(o) {
				w.queue = append(w.queue, queued{typ: watch.Added, obj: o})
			}
		}
		w.from = s.rv
		if q.initialEvents {
			w.queue = append(w.queue, queued{typ: watch.Bookmark, obj: initialEventsEnd(res, s.rv)})
		}
	} else {
		for _, ev := range s.history {
			if ev.rv > q.rv {
				w.offer(ev)
			}
		}
	}
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
	}()

	timeout := q.timeout
	if timeout <= 0 {
		timeout = minWatchTimeout + time.Duration(rand.Int64N(int64(minWatchTimeout)))
	}
	deadline := time.Now().Add(timeout)
	next := func() {}
	end := time.NewTimer(timeout)
	defer end.Stop()
	var bookmarkDue <-chan time.Time
	if q.bookmarks {
		t := time.NewTimer(nextBookmark(time.Now(), deadline))
		defer t.Stop()
		bookmarkDue = t.C
		next = func() { t.Reset(nextBookmark(time.Now(), deadline)) }
	}
	m.streamHeader(rw, md)
	select {
	case w.signal <- struct{}{}:
	default:
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-end.C:
			return
		case <-w.signal:
			events, behind := w.take()
			for _, e := range events {
				if !m.writeEvent(rw, md, e.typ, e.obj) {
					return
				}
			}
			if behind {
				return
			}
			flush(rw)
		case <-bookmarkDue:
			if rv, idle := m.idleRV(w); idle {
				if !m.writeEvent(rw, md, watch.Bookmark, bookmark(res, rv)) {
					return
				}
				flush(rw)
			}
			next()
		}
	}
}

// bookmark is a bookmark event's object: the kind, at resourceVersion rv.
func bookmark(res *resource, rv uint64) *stored {
	obj := res.newObject()
	obj.GetObjectKind().SetGroupVersionKind(res.gvk())
	setRV(obj, rv)
	return &stored{obj: obj}
}

// initialEventsEnd is the bookmark that ends a streamed list's initial
// events.
func initialEventsEnd(res *resource, rv uint64) *stored {
	b := bookmark(res, rv)
	b.meta().SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	return b
}

// nextBookmark is when the next bookmark is due: every bookmarkEvery, and
// once shortly before the watch ends, as a kube-apiserver sends them.
func nextBookmark(now, deadline time.Time) time.Duration {
	next := now.Add(bookmarkEvery)
	if before := deadline.Add(-2 * time.Second); before.Before(next) && before.After(now) {
		next = before
	}
	return next.Sub(now)
}

// idleRV is the member's resourceVersion when the watch has nothing queued:
// a bookmark at it skips no event the watch is owed.
func (m *Member) idleRV(w *watcher) (uint64, bool) {
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	return m.store.rv, len(w.queue) == 0
}

func (m *Member) streamHeader(rw http.ResponseWriter, md *media) {
	rw.Header().Set("Content-Type", md.contentType(true))
	rw.Header().Set("Cache-Control", "no-cache, private")
	rw.WriteHeader(http.StatusOK)
	flush(rw)
}

// writeEvent writes one watch event: the object's shared encoding inside
// the stream encoding's WatchEvent frame.
func (m *Member) writeEvent(rw http.ResponseWriter, md *media, typ watch.EventType, obj *stored) bool {
	raw, err := obj.encoded(md)
	if err != nil {
		return false
	}
	enc := streaming.NewEncoder(md.info.StreamSerializer.Framer.NewFrameWriter(rw), md.info.StreamSerializer.Serializer)
	return enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}}) == nil
}

func flush(rw http.ResponseWriter) {
	if f, ok := rw.(http.Flusher); ok {
		f.Flush()
	}
}
