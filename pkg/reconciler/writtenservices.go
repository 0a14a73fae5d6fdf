package reconciler

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// writtenServices remembers this replica's services writes for writeMemory,
// so that their echoes in the member caches start no pass: such an event
// tells the writer nothing its write's answer did not.
type writtenServices struct {
	now func() time.Time

	mu sync.Mutex
	m  map[writtenServiceKey]writtenService
}

type writtenServiceKey struct{ conn, kind, namespace, name string }

type writtenService struct {
	mesh            types.NamespacedName
	resourceVersion string
	at              time.Time
}

func newWrittenServices() *writtenServices {
	return &writtenServices{now: time.Now, m: map[writtenServiceKey]writtenService{}}
}

// remember records the answer of a write of mesh through conn.
func (w *writtenServices) remember(conn, kind string, mesh types.NamespacedName, answer metav1.Object) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, v := range w.m {
		if now.Sub(v.at) > writeMemory {
			delete(w.m, k)
		}
	}
	w.m[writtenServiceKey{conn, kind, answer.GetNamespace(), answer.GetName()}] = writtenService{mesh: mesh, resourceVersion: answer.GetResourceVersion(), at: now}
}

// shows reports whether obj in conn's cache is the answer of a remembered
// write, and of which mesh; it forgets the write.
func (w *writtenServices) shows(conn, kind string, obj metav1.Object) (types.NamespacedName, bool) {
	k := writtenServiceKey{conn, kind, obj.GetNamespace(), obj.GetName()}
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.m[k]
	if !ok || v.resourceVersion != obj.GetResourceVersion() || w.now().Sub(v.at) > writeMemory {
		return types.NamespacedName{}, false
	}
	delete(w.m, k)
	return v.mesh, true
}

// ownServicesWrite is the member caches' services echo filter: an echo
// makes the plan cache compute the mesh's services again when next asked,
// without a pass.
func (r *Reconciler) ownServicesWrite(conn, kind string, obj metav1.Object) bool {
	mesh, ok := r.writtenSvc.shows(conn, kind, obj)
	if ok {
		r.planner.Invalidate(mesh)
	}
	return ok
}

// ownWrites tells the member caches which of their changes only show a
// write of this replica's, Peer or services object.
type ownWrites struct{ r *Reconciler }

func (o ownWrites) Peer(conn string, peer *kilov1alpha1.Peer) bool { return o.r.ownWrite(conn, peer) }

func (o ownWrites) Services(conn, kind string, obj metav1.Object) bool {
	return o.r.ownServicesWrite(conn, kind, obj)
}
