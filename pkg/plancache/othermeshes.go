package plancache

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// otherMeshSource gives the planner the networks that other meshes claim
// on the member clusters a mesh shares with them. Clusters are the same
// when their verified identities are (clusters.ClusterState.Identity: read
// with each mesh's own credentials), never because two kubeconfigs name
// one URL, so a mesh that cannot reach a cluster claims nothing there.
// Of two meshes whose networks collide on a shared cluster the one created
// first (then the lower UID) keeps them; the other's plan leaves them out
// of its Peers there and reports the conflict. Meshes with multi-cluster
// services Enabled on a shared cluster are reported to each other's plan
// whichever came first (a cluster belongs to one ClusterSet), with which
// of them takes precedence.
//
// A mesh's claims change with its spec and with the identities of its
// clusters (a Secret pointing elsewhere, a cluster verified at last), so
// every such change invalidates the plans of the meshes sharing a cluster
// with it, before and after the change.
type otherMeshSource struct {
	members Members

	mu         sync.Mutex
	meshes     cache.Store // the ClusterMesh informer's, from FollowMeshes
	ids        map[types.NamespacedName]map[string]string
	generation map[types.NamespacedName]int64 // of the spec the claims were last reported for
	byIdentity map[string]map[types.NamespacedName]bool
	notify     []func(types.NamespacedName)
}

func newOtherMeshSource(members Members) *otherMeshSource {
	s := &otherMeshSource{
		members:    members,
		ids:        map[types.NamespacedName]map[string]string{},
		generation: map[types.NamespacedName]int64{},
		byIdentity: map[string]map[types.NamespacedName]bool{},
	}
	members.AddChangeHandler(s.memberChanged)
	return s
}

func (s *otherMeshSource) onChange(f func(types.NamespacedName)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = append(s.notify, f)
}

// follow gives the source the stored meshes.
func (s *otherMeshSource) follow(meshes cache.Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meshes = meshes
}

// memberChanged re-reads the identities of a mesh whose member caches
// changed.
func (s *otherMeshSource) memberChanged(key types.NamespacedName) {
	s.mu.Lock()
	store := s.meshes
	s.mu.Unlock()
	if store == nil {
		return
	}
	obj, exists, err := store.GetByKey(key.String())
	if err != nil || !exists {
		return
	}
	if mesh, ok := obj.(*meshv1alpha1.ClusterMesh); ok {
		s.update(key, s.members.Identities(mesh), mesh.Generation)
	}
}

// meshChanged is told of every stored version of a mesh: a new spec may
// claim other networks. Status and metadata writes change no claim.
func (s *otherMeshSource) meshChanged(mesh *meshv1alpha1.ClusterMesh) {
	s.update(types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}, s.members.Identities(mesh), mesh.Generation)
}

// meshGone drops a deleted mesh's claims.
func (s *otherMeshSource) meshGone(key types.NamespacedName) {
	s.update(key, nil, -1)
}

// update records a mesh's identities and the generation of its spec, and
// when either changed invalidates the plans of every mesh sharing a
// cluster with it, as it was and as it is (generation -1: the mesh is gone).
func (s *otherMeshSource) update(key types.NamespacedName, ids map[string]string, generation int64) {
	s.mu.Lock()
	old := s.ids[key]
	oldGen, known := s.generation[key]
	if known && oldGen == generation && sameIdentities(old, ids) {
		s.mu.Unlock()
		return
	}
	if generation < 0 {
		delete(s.generation, key)
	} else {
		s.generation[key] = generation
	}
	affected := map[types.NamespacedName]bool{}
	for _, set := range []map[string]string{old, ids} {
		for _, id := range set {
			for k := range s.byIdentity[id] {
				affected[k] = true
			}
		}
	}
	for _, id := range old {
		if id != "" {
			delete(s.byIdentity[id], key)
			if len(s.byIdentity[id]) == 0 {
				delete(s.byIdentity, id)
			}
		}
	}
	if ids == nil {
		delete(s.ids, key)
	} else {
		s.ids[key] = ids
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		if s.byIdentity[id] == nil {
			s.byIdentity[id] = map[types.NamespacedName]bool{}
		}
		s.byIdentity[id][key] = true
	}
	delete(affected, key) // its own plan is invalidated by its own change
	notify := s.notify
	s.mu.Unlock()
	for k := range affected {
		for _, f := range notify {
			f(k)
		}
	}
}

func sameIdentities(a, b map[string]string) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// hasSynced is true: a cluster whose identity is not verified yet claims
// nothing, and its verification is reported as a change.
func (s *otherMeshSource) hasSynced() bool { return true }

// fill gives the planner the claims of the meshes that take precedence
// over mesh on the clusters it shares with them, and the clusters it
// shares with any mesh with multi-cluster services.
func (s *otherMeshSource) fill(mesh *meshv1alpha1.ClusterMesh, in *planner.Input) error {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	mine := s.members.Identities(mesh)
	s.mu.Lock()
	store := s.meshes
	others := map[types.NamespacedName]bool{}
	for _, id := range mine {
		for k := range s.byIdentity[id] {
			if k != key {
				others[k] = true
			}
		}
	}
	s.mu.Unlock()
	if store == nil || len(others) == 0 {
		return nil
	}
	// byID names, per identity, this mesh's cluster that has it.
	byID := map[string]string{}
	for name, id := range mine {
		if id != "" {
			byID[id] = name
		}
	}
	keys := slices.SortedFunc(maps.Keys(others), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		obj, exists, err := store.GetByKey(k.String())
		if err != nil || !exists {
			continue
		}
		other, ok := obj.(*meshv1alpha1.ClusterMesh)
		if !ok {
			continue
		}
		theirs := s.members.Identities(other)
		earlier := validation.Precedes(other, mesh)
		if other.Spec.MultiClusterServices == meshv1alpha1.MultiClusterServicesEnabled {
			fillServicesShared(in, byID, theirs, earlier)
		}
		if !earlier {
			continue
		}
		var claims []planner.OtherMeshClaim
		for i := range other.Spec.Clusters {
			e := &other.Spec.Clusters[i]
			id := theirs[e.Name]
			if id == "" {
				continue // unverified: claims nothing
			}
			nets, _ := validation.ClusterNetworks(e, field.NewPath("spec"))
			for _, n := range nets {
				claims = append(claims, planner.OtherMeshClaim{Prefix: n.Prefix, SameCluster: byID[id]})
			}
		}
		targets := map[string]bool{}
		for _, id := range theirs {
			if target, shared := byID[id]; shared {
				targets[target] = true
			}
		}
		for _, target := range slices.Sorted(maps.Keys(targets)) {
			if in.OtherMeshClaims == nil {
				in.OtherMeshClaims = map[string][]planner.OtherMeshClaim{}
			}
			in.OtherMeshClaims[target] = append(in.OtherMeshClaims[target], claims...)
		}
	}
	return nil
}

// fillServicesShared records the clusters of the planned mesh (byID: its
// cluster of each verified identity) that another mesh with services
// Enabled verified too (theirs), and whether that mesh takes precedence.
func fillServicesShared(in *planner.Input, byID, theirs map[string]string, earlier bool) {
	for _, id := range theirs {
		name, shared := byID[id]
		if id == "" || !shared {
			continue
		}
		if in.OtherServicesMeshes == nil {
			in.OtherServicesMeshes = map[string]planner.OtherServicesMesh{}
		}
		o := in.OtherServicesMeshes[name]
		o.Earlier = o.Earlier || earlier
		in.OtherServicesMeshes[name] = o
	}
}
