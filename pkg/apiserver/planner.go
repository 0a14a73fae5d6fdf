package apiserver

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermesh"
)

// planMaxAge bounds how long a plan is reused when nothing was reported to
// change: node readiness depends on the clock (kg's 60 s last-seen rule), so
// a plan also ages. kg checks in every 30 s, so a second is far below what
// Kilo itself notices.
const planMaxAge = time.Second

// cachePlanner plans a mesh from what the member-cluster caches hold now.
// The views and the reconciler share this one instance, so what users
// preview is what gets applied. A plan is computed once per change, not per
// request: every change to a mesh's clusters (nodes, Peers, reachability,
// Secrets) or to the mesh itself invalidates it.
type cachePlanner struct {
	clusters *clusters.Manager
	clock    clock.PassiveClock

	mu    sync.Mutex
	plans map[types.NamespacedName]*cachedPlan
}

// cachedPlan is one mesh's plan; its mutex makes concurrent requests wait
// for one computation instead of each planning.
type cachedPlan struct {
	mu              sync.Mutex
	uid             types.UID
	resourceVersion string
	changes         uint64 // of the mesh's clusters when planned
	at              time.Time
	plan            *planner.Plan

	pending uint64 // changes reported so far, guarded by cachePlanner.mu
}

var (
	_ clustermesh.Planner = &cachePlanner{}
	_ reconciler.Planner  = &cachePlanner{}
)

func newCachePlanner(members *clusters.Manager, clk clock.PassiveClock) *cachePlanner {
	p := &cachePlanner{clusters: members, clock: clk, plans: map[types.NamespacedName]*cachedPlan{}}
	members.AddChangeHandler(p.invalidate)
	return p
}

func (p *cachePlanner) invalidate(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.plans[key]; c != nil {
		c.pending++
	}
}

// forget drops the plan of a deleted mesh.
func (p *cachePlanner) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.plans, key)
}

// Plan returns the mesh's current plan. The plan is shared: read it, never modify it.
func (p *cachePlanner) Plan(mesh *meshv1alpha1.ClusterMesh) (*planner.Plan, error) {
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	p.mu.Lock()
	c := p.plans[key]
	if c == nil {
		c = &cachedPlan{}
		p.plans[key] = c
	}
	p.mu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	p.mu.Lock()
	changes := c.pending
	p.mu.Unlock()
	now := p.clock.Now()
	if c.plan != nil && c.uid == mesh.UID && c.resourceVersion == mesh.ResourceVersion && c.changes == changes && now.Sub(c.at) < planMaxAge {
		return c.plan, nil
	}
	plan, err := planner.Compute(p.input(mesh, now))
	if err != nil {
		return nil, err
	}
	c.uid, c.resourceVersion, c.changes, c.at, c.plan = mesh.UID, mesh.ResourceVersion, changes, now, plan
	return plan, nil
}

func (p *cachePlanner) input(mesh *meshv1alpha1.ClusterMesh, now time.Time) planner.Input {
	in := planner.Input{
		MeshNamespace: mesh.Namespace,
		MeshName:      mesh.Name,
		MeshUID:       mesh.UID,
		Spec:          mesh.Spec,
		Clusters:      map[string]planner.ClusterSnapshot{},
		Now:           now,
	}
	for name, s := range p.clusters.Snapshot(mesh) {
		in.Clusters[name] = snapshot(s)
	}
	return in
}

// snapshot tells the planner what it may rely on: a cluster whose caches
// never synced is as unknown as an unreachable one, and one that synced but
// stopped answering keeps its last known nodes, so its Peers elsewhere stay.
func snapshot(s clusters.ClusterState) planner.ClusterSnapshot {
	if !s.Synced {
		msg := s.LastError
		if msg == "" {
			msg = "the caches of this cluster have not synced yet"
		}
		return planner.ClusterSnapshot{Reachable: false, Error: msg}
	}
	return planner.ClusterSnapshot{Reachable: s.Reachable, Error: s.LastError, Nodes: s.Nodes, Peers: s.Peers}
}
