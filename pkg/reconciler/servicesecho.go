package reconciler

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// servicesWrites remembers this replica's services writes for writeMemory,
// so that their echoes in the member caches start no pass: such an event
// tells the writer nothing its write's answer did not.
type servicesWrites struct {
	now func() time.Time

	mu sync.Mutex
	m  map[servicesWriteKey]servicesWrite
}

type servicesWriteKey struct{ conn, kind, namespace, name string }

type servicesWrite struct {
	mesh            types.NamespacedName
	resourceVersion string
	at              time.Time
}

func newServicesWrites() *servicesWrites {
	return &servicesWrites{now: time.Now, m: map[servicesWriteKey]servicesWrite{}}
}

// remember records the answer of a write of mesh through conn.
func (w *servicesWrites) remember(conn, kind string, mesh types.NamespacedName, answer metav1.Object) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, v := range w.m {
		if now.Sub(v.at) > writeMemory {
			delete(w.m, k)
		}
	}
	w.m[servicesWriteKey{conn, kind, answer.GetNamespace(), answer.GetName()}] = servicesWrite{mesh: mesh, resourceVersion: answer.GetResourceVersion(), at: now}
}

// echo reports whether obj in conn's cache is the answer of a remembered
// write, and of which mesh; it forgets the write.
func (w *servicesWrites) echo(conn, kind string, obj metav1.Object) (types.NamespacedName, bool) {
	k := servicesWriteKey{conn, kind, obj.GetNamespace(), obj.GetName()}
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
	mesh, ok := r.svcWrites.echo(conn, kind, obj)
	if ok {
		r.planner.Invalidate(mesh)
	}
	return ok
}
