package hollow

import (
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Limits of a member's event history, which watches resume from: as a
// kube-apiserver's watch cache, it keeps recent events only, and a watch
// from an older resourceVersion gets 410 Gone (the client then relists).
const (
	historyFor = 75 * time.Second
	historyMax = 100 * 1024
	// historyMin events are kept whatever their age, so that a quiet
	// member does not answer 410 to a watch a second after its list.
	historyMin = 100
)

// stored is one version of an object; it never changes once stored, so
// that its encodings are made once and shared by every watch.
type stored struct {
	obj runtime.Object
	rv  uint64

	mu    sync.Mutex
	json  []byte
	proto []byte
}

func (s *stored) meta() metav1.Object {
	m, _ := meta.Accessor(s.obj)
	return m
}

// event is one change of a member's objects, in resourceVersion order.
type event struct {
	typ  watch.EventType
	res  *resource
	key  string
	obj  *stored // the object as of the event (the last version when deleted)
	prev *stored // nil when added
	rv   uint64
	at   time.Time
}

// store holds a member's objects, its event history and its watches. One
// resourceVersion counter runs across all its resources, as etcd's does.
type store struct {
	mu       sync.Mutex
	rv       uint64
	objects  map[*resource]map[string]*stored
	history  []event
	oldest   uint64 // a watch may resume from oldest or later
	watchers map[*watcher]struct{}
	// clusterIPs counts the ClusterIPs allocated.
	clusterIPs int
}

func newStore() *store {
	s := &store{rv: 1, oldest: 1, objects: map[*resource]map[string]*stored{}, watchers: map[*watcher]struct{}{}}
	for _, r := range resources {
		s.objects[r] = map[string]*stored{}
	}
	return s
}

func objectKey(namespace, name string) string { return namespace + "/" + name }

// get returns the stored object, or nil.
func (s *store) get(r *resource, key string) *stored {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objects[r][key]
}

// commitLocked stores obj (nil: deletes key) at the next resourceVersion,
// records the event and hands it to the watches. obj's resourceVersion is
// set here.
func (s *store) commitLocked(r *resource, key string, obj runtime.Object, now time.Time) *stored {
	prev := s.objects[r][key]
	s.rv++
	ev := event{res: r, key: key, prev: prev, rv: s.rv, at: now}
	switch {
	case obj == nil:
		delete(s.objects[r], key)
		// The deleted object carries the deletion's resourceVersion, as a
		// kube-apiserver's DELETED event does.
		gone := prev.obj.DeepCopyObject()
		setRV(gone, s.rv)
		ev.typ, ev.obj = watch.Deleted, &stored{obj: gone, rv: s.rv}
	case prev == nil:
		setRV(obj, s.rv)
		ev.typ, ev.obj = watch.Added, &stored{obj: obj, rv: s.rv}
		s.objects[r][key] = ev.obj
	default:
		setRV(obj, s.rv)
		ev.typ, ev.obj = watch.Modified, &stored{obj: obj, rv: s.rv}
		s.objects[r][key] = ev.obj
	}
	s.history = append(s.history, ev)
	s.trimLocked(now)
	for w := range s.watchers {
		w.offer(ev)
	}
	return ev.obj
}

// trimLocked forgets events past the history's limits; watches from before
// them get 410 Gone.
func (s *store) trimLocked(now time.Time) {
	drop := 0
	for drop < len(s.history)-historyMin &&
		(len(s.history)-drop > historyMax || now.Sub(s.history[drop].at) > historyFor) {
		drop++
	}
	if drop == 0 {
		return
	}
	s.oldest = s.history[drop-1].rv
	// Resliced, not copied: appends reallocate the array as it fills, and
	// the cleared events no longer hold their objects meanwhile.
	clear(s.history[:drop])
	s.history = s.history[drop:]
}

func setRV(obj runtime.Object, rv uint64) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatUint(rv, 10))
	}
}

// list returns the objects of r that match, sorted by key (as etcd lists
// them), starting after the key after (""), and the current
// resourceVersion.
func (s *store) list(r *resource, match func(*stored) bool, after string) ([]*stored, uint64) {
	s.mu.Lock()
	keys := make([]string, 0, len(s.objects[r]))
	for k := range s.objects[r] {
		if k > after {
			keys = append(keys, k)
		}
	}
	objs := make([]*stored, 0, len(keys))
	sort.Strings(keys)
	for _, k := range keys {
		if o := s.objects[r][k]; match(o) {
			objs = append(objs, o)
		}
	}
	rv := s.rv
	s.mu.Unlock()
	return objs, rv
}

// compact forgets the history: what was stored so far is as a
// kube-apiserver's objects from before its watch cache started, and a
// watch from before now gets 410 Gone.
func (s *store) compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.history)
	s.history = s.history[:0]
	s.oldest = s.rv
}

// currentRV is the member's resourceVersion now.
func (s *store) currentRV() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}
