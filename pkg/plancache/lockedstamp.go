package plancache

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// lockedStamp is what a cached result of a mesh (a plan, its services)
// records to tell whether it is still current, and the lock its holder
// computes the result under: concurrent requests wait for one computation
// instead of each computing.
type lockedStamp struct {
	mu              sync.Mutex
	uid             types.UID
	resourceVersion string
	changes         uint64 // reported when the result was computed

	reported uint64 // changes reported so far, guarded by Cache.mu
}

func (s *lockedStamp) base() *lockedStamp { return s }

// current reports whether the result was computed for this mesh object
// with every change reported so far.
func (s *lockedStamp) current(mesh *meshv1alpha1.ClusterMesh, changes uint64) bool {
	return s.uid == mesh.UID && s.resourceVersion == mesh.ResourceVersion && s.changes == changes
}

// set records what the result now stored was computed for.
func (s *lockedStamp) set(mesh *meshv1alpha1.ClusterMesh, changes uint64) {
	s.uid, s.resourceVersion, s.changes = mesh.UID, mesh.ResourceVersion, changes
}

type withLockedStamp interface{ base() *lockedStamp }

// acquire returns the mesh's entry in entries, added when missing, with
// its mutex held, and the changes reported to it so far. They are read
// before the inputs: a change reported while computing leaves the result
// marked older than it, so the next call computes again.
func acquire[E any, P interface {
	*E
	withLockedStamp
}](c *Cache, entries map[types.NamespacedName]P, key types.NamespacedName) (P, uint64) {
	c.mu.Lock()
	e := entries[key]
	if e == nil {
		e = new(E)
		entries[key] = e
	}
	c.mu.Unlock()
	e.base().mu.Lock()
	c.mu.Lock()
	changes := e.base().reported
	c.mu.Unlock()
	return e, changes
}
