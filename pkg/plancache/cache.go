// Package plancache keeps one plan per ClusterMesh, computed by the planner
// from what the member-cluster caches hold. The views and the reconciler
// read the same Cache, so what users preview is what gets applied, and a
// plan is computed once per change, not once per request or pass.
package plancache

import (
	"cmp"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// MaxAge bounds how long a plan is reused when no input reported a change:
// node readiness depends on the clock (Kilo's check-in window), so a plan
// also ages. kg checks in every 30 s, so a second is far below what Kilo
// itself notices.
const MaxAge = time.Second

// Config is what a Cache is built from.
type Config struct {
	// Members are the member-cluster caches: the plans' Nodes and Peers.
	Members Members
	// Grants say what ClusterMeshGrants allow each namespace; nil means
	// there are none.
	Grants Grants
	// GracePeriod is how long a mesh stored before grants existed, and
	// covered by none, keeps its access to the local cluster (the
	// server's --host-access-grace-period).
	GracePeriod time.Duration
	// Clock judges node readiness and plan age; the real clock when nil.
	Clock clock.PassiveClock
	// Installation identifies this server's installation; every Peer
	// planned carries it (planner.Input.Installation).
	Installation string
	// ServerPolicy is where member API servers may be; the same networks
	// open the guarded ranges for the endpoints of Peers on the local
	// cluster (planner.HostAccess.EndpointNetworks). Nil: none does.
	ServerPolicy memberaccess.ServerPolicy
	// Authorizer answers SubjectAccessReviews for the recorded author of a
	// mesh with services on the local cluster; nil: only grants allow.
	Authorizer authorizer.Authorizer
	// HostServicesTTL is how long an answer of Authorizer is kept, and
	// MaxHostServicesAnswers how many (defaults when zero).
	HostServicesTTL        time.Duration
	MaxHostServicesAnswers int
}

// Cache is the per-mesh plan cache. A mesh's plan is recomputed when the
// mesh has another UID or resourceVersion, when one of the plan's input
// sources reports a change for the mesh, or after MaxAge.
type Cache struct {
	members      Members
	clock        clock.PassiveClock
	installation string
	// sources fill the planner's input beyond the mesh itself, each
	// invalidating the plans its changes touch.
	sources []source
	// others is the source of other meshes' claims, told of stored meshes
	// by FollowMeshes.
	others *otherMeshSource
	// hostServices decides the namespaces of the local cluster a mesh's
	// services may use.
	hostServices *hostServices

	mu       sync.Mutex
	plans    map[types.NamespacedName]*entry
	services map[types.NamespacedName]*servicesEntry // see Services
	// meshes are the stored meshes, set by FollowMeshes.
	meshes cache.Store
	// handlers hear of every mesh whose inputs changed.
	handlers []func(types.NamespacedName)
}

// entry is one mesh's plan.
type entry struct {
	lockedStamp
	at   time.Time
	plan *planner.Plan
	// state is the planner's state of plan, for the next plan (incremental.go).
	state *planner.State
}

// New builds the cache and subscribes it to its sources' changes.
func New(cfg Config) (*Cache, error) {
	if cfg.Members == nil {
		return nil, errors.New("plancache: Members is required")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if cfg.GracePeriod < 0 {
		return nil, errors.New("plancache: GracePeriod must not be negative")
	}
	var g Grants = noGrants{}
	if cfg.Grants != nil {
		g = cfg.Grants
	}
	c := &Cache{
		members:      cfg.Members,
		clock:        clk,
		installation: cfg.Installation,
		plans:        map[types.NamespacedName]*entry{},
		services:     map[types.NamespacedName]*servicesEntry{},
	}
	c.others = newOtherMeshSource(cfg.Members)
	c.hostServices = &hostServices{authz: cfg.Authorizer, grants: g, clock: clk,
		ttl: cmp.Or(cfg.HostServicesTTL, DefaultHostServicesTTL), max: cmp.Or(cfg.MaxHostServicesAnswers, DefaultMaxHostServicesAnswers)}
	c.sources = []source{memberSource{cfg.Members}, &hostSource{grants: g, grace: cfg.GracePeriod, meshesIn: c.meshesIn, servers: cfg.ServerPolicy}, c.others}
	for _, s := range c.sources {
		s.onChange(c.changed)
	}
	return c, nil
}

// AddChangeHandler calls f with every mesh one of whose inputs changed,
// after its cached plan was invalidated: the reconciler follows every
// input of a plan this way, whatever the source.
func (c *Cache) AddChangeHandler(f func(types.NamespacedName)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, f)
}

// HasSynced reports whether every input source has read its inputs once.
func (c *Cache) HasSynced() bool {
	for _, s := range c.sources {
		if !s.hasSynced() {
			return false
		}
	}
	return true
}

// changed invalidates a mesh's plan and tells the handlers.
func (c *Cache) changed(key types.NamespacedName) {
	c.invalidate(key)
	c.mu.Lock()
	handlers := c.handlers
	c.mu.Unlock()
	for _, f := range handlers {
		f(key)
	}
}

// invalidate marks the cached plan of a mesh as older than its inputs. A
// mesh without a cached plan has nothing to invalidate: its first plan
// reads the inputs as they are then.
func (c *Cache) invalidate(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.plans[key]; e != nil {
		e.reported++
	}
	if e := c.services[key]; e != nil {
		e.reported++
	}
}

// Invalidate marks a mesh's plan as older than its inputs without telling
// the change handlers: for a change whose maker needs no pass for it (the
// reconciler's own write, seen in a member cache).
func (c *Cache) Invalidate(key types.NamespacedName) { c.invalidate(key) }

// meshesIn lists the stored meshes of a namespace.
func (c *Cache) meshesIn(namespace string) []types.NamespacedName {
	c.mu.Lock()
	store := c.meshes
	c.mu.Unlock()
	if store == nil {
		return nil
	}
	var out []types.NamespacedName
	for _, obj := range store.List() {
		if m, ok := obj.(*meshv1alpha1.ClusterMesh); ok && m.Namespace == namespace {
			out = append(out, types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
		}
	}
	return out
}

// forget drops the plan of a deleted mesh.
func (c *Cache) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.plans, key)
	delete(c.services, key)
}

// Plan returns the mesh's current plan. The plan is shared: read it, never modify it.
func (c *Cache) Plan(mesh *meshv1alpha1.ClusterMesh) (*planner.Plan, error) {
	e, changes := acquire(c, c.plans, types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name})
	defer e.mu.Unlock()
	now := c.clock.Now()
	if e.plan != nil && e.current(mesh, changes) && now.Sub(e.at) < MaxAge {
		return e.plan, nil
	}
	in, err := c.input(mesh, now)
	if err != nil {
		return nil, err
	}
	plan, err := e.compute(in)
	if err != nil {
		return nil, err
	}
	e.set(mesh, changes)
	e.at, e.plan = now, plan
	return plan, nil
}

func (c *Cache) input(mesh *meshv1alpha1.ClusterMesh, now time.Time) (planner.Input, error) {
	in := planner.Input{
		MeshNamespace: mesh.Namespace,
		MeshName:      mesh.Name,
		MeshUID:       mesh.UID,
		Installation:  c.installation,
		Spec:          mesh.Spec,
		Now:           now,
	}
	for _, s := range c.sources {
		if err := s.fill(mesh, &in); err != nil {
			return planner.Input{}, fmt.Errorf("planning ClusterMesh %s/%s: %w", mesh.Namespace, mesh.Name, err)
		}
	}
	return in, nil
}
