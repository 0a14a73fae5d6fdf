package reconciler

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// What meshes that no longer exist wrote. The finalizer and the removal of
// a vanished mesh (vanished.go) cover the meshes this process saw go; a
// mesh may also be deleted while no replica runs, and a member cluster may
// be unreachable for longer than they wait. When a term starts and every
// OrphanSweepPeriod, every connection the member caches hold is looked at:
// the meshes this installation wrote for (planner.LabelInstallation) that
// storage does not hold have what they wrote there removed (cleanup). The
// owners are read from the Peer caches each time, and from a live list of
// the services objects once per connection and term (the services caches
// run only while services are Enabled). Nothing of it is kept in memory, so
// a restart of every replica, or a member back after a long outage, loses
// nothing.
//
// Storage, not a cache, must say that no mesh of that namespace, name and
// UID exists. Another installation of this server sharing a member cluster
// labels its objects alike but for the installation, and its meshes are not
// in this one's storage: its objects are never looked at. An object written
// before it carried the installation gets it at its mesh's next pass.

// OrphanSweepPeriod is how often the connections are checked for what
// meshes that no longer exist wrote.
const OrphanSweepPeriod = time.Minute

// sweep remembers, for the current term, the connections whose services
// objects were listed.
type sweep struct {
	mu     sync.Mutex
	listed map[string]bool
}

// sweepLoop sweeps when a term starts and every OrphanSweepPeriod; in the
// term's first period, every settleRecheck until every connection's caches
// could be looked at (after a start they are still filling).
func (r *Reconciler) sweepLoop(ctx context.Context) {
	r.swept.mu.Lock()
	r.swept.listed = map[string]bool{}
	r.swept.mu.Unlock()
	start := time.Now()
	for {
		wait := OrphanSweepPeriod
		if complete := r.sweepOrphans(ctx); !complete && time.Since(start) < OrphanSweepPeriod {
			wait = settleRecheck
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// sweepOrphans removes, from every connection the member caches hold,
// what this installation wrote for meshes that storage does not hold. It
// reports whether every connection could be looked at.
func (r *Reconciler) sweepOrphans(ctx context.Context) (complete bool) {
	if r.installation == "" {
		return true
	}
	complete = true
	byOwner := map[meshOwner][]clusters.Member{}
	seen := map[string]bool{}
	for _, conn := range r.clusters.Connections() {
		seen[conn.Name()] = true
		if !usable(conn.State, true) {
			complete = false
			continue
		}
		owners := map[meshOwner]bool{}
		for _, o := range installationOwners(conn.State.Peers, r.installation) {
			owners[o] = true
		}
		if !r.servicesOwners(ctx, conn, owners) {
			complete = false
		}
		for o := range owners {
			byOwner[o] = append(byOwner[o], conn)
		}
	}
	r.swept.keep(seen)
	logger := klog.FromContext(ctx)
	for o, conns := range byOwner {
		if r.meshCached(o) {
			continue // it exists: the finalizer is the one to remove what it wrote
		}
		gone, err := r.meshGone(ctx, o.namespace, o.name, o.uid)
		if err != nil || !gone {
			if err != nil {
				logger.Error(err, "Cannot tell whether a mesh that wrote on a member exists; what it wrote is kept", "mesh", o.namespace+"/"+o.name, "uid", o.uid)
			}
			continue
		}
		mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: o.namespace, Name: o.name, UID: o.uid}}
		for _, conn := range conns {
			res := r.cleanup(ctx, mesh, conn, written{peers: true, services: r.services != nil})
			logger.Info("Removed what a ClusterMesh that no longer exists wrote", "mesh", klog.KObj(mesh), "uid", o.uid,
				"connection", conn.Name(), "objects", res.found, "err", res.err)
		}
	}
	return complete
}

// servicesOwners adds to owners the meshes this installation wrote
// services objects for on conn, listed live once per term; it reports
// false when the list failed (it is tried again at the next sweep).
func (r *Reconciler) servicesOwners(ctx context.Context, conn clusters.Member, owners map[meshOwner]bool) bool {
	if r.services == nil || r.swept.has(conn.Name()) {
		return true
	}
	selector := planner.LabelManagedBy + "=" + planner.ManagedByValue + "," + planner.LabelInstallation + "=" + r.installation
	for _, kind := range []clusters.Kind{clusters.KindServiceImport, clusters.KindService, clusters.KindEndpointSlice} {
		cont := ""
		for page := 0; page == 0 || cont != ""; page++ {
			list, err := conn.List(ctx, kind, selector, cleanupListLimit, cont)
			if err != nil && kind == clusters.KindServiceImport && neverWritten(err) {
				r.swept.add(conn.Name())
				return true
			}
			if err != nil {
				klog.FromContext(ctx).V(2).Info("Cannot list the services objects of a connection yet", "connection", conn.Name(), "err", err)
				return false
			}
			for _, o := range list.Items {
				if owner, ok := installationOwner(o.Labels, r.installation); ok {
					owners[owner] = true
				}
			}
			cont = list.Continue
		}
	}
	r.swept.add(conn.Name())
	return true
}

func (s *sweep) has(conn string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed[conn]
}

func (s *sweep) add(conn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listed != nil {
		s.listed[conn] = true
	}
}

// keep forgets the connections that are gone.
func (s *sweep) keep(conns map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.listed {
		if !conns[c] {
			delete(s.listed, c)
		}
	}
}

// meshCached reports whether the mesh cache holds o's mesh (that UID at
// that namespace and name): then it exists, and storage need not be asked.
// A cache miss proves nothing; storage is asked then.
func (r *Reconciler) meshCached(o meshOwner) bool {
	obj, ok, err := r.meshes.GetIndexer().GetByKey(o.namespace + "/" + o.name)
	if err != nil || !ok {
		return false
	}
	mesh := asMesh(obj)
	return mesh != nil && mesh.UID == o.uid
}

// meshOwner is the mesh the labels of an object it wrote name.
type meshOwner struct {
	namespace, name string
	uid             types.UID
}

// installationOwner is the mesh that labels l name, when they are those
// of an object this installation wrote.
func installationOwner(l map[string]string, installation string) (meshOwner, bool) {
	if l[planner.LabelManagedBy] != planner.ManagedByValue || l[planner.LabelInstallation] != installation || l[planner.LabelMeshUID] == "" {
		return meshOwner{}, false
	}
	return meshOwner{l[planner.LabelMeshNamespace], l[planner.LabelMeshName], types.UID(l[planner.LabelMeshUID])}, true
}

// installationOwners are the meshes that Peers of this installation among
// peers (a cache's) name, each once, in the order first named.
func installationOwners(peers planner.PeerList, installation string) []meshOwner {
	seen := map[meshOwner]bool{}
	var out []meshOwner
	for _, p := range peers.All() {
		if o, ok := installationOwner(p.Labels, installation); ok && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out
}
