package plancache

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/grants"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

var now = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func TestHostAccess(t *testing.T) {
	covering := &grants.Coverage{Namespace: "ns", Grants: []string{"g1", "g2"},
		MemberNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		LocalNetworks:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	narrow := &grants.Coverage{Namespace: "ns", Grants: []string{"g1"},
		MemberNetworks: []netip.Prefix{netip.MustParsePrefix("10.3.0.0/16")},
		LocalNetworks:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	none := &grants.Coverage{Namespace: "ns"}
	granted := func(status metav1.ConditionStatus, reason string, at time.Time) []metav1.Condition {
		return []metav1.Condition{{Type: meshv1alpha1.ConditionGranted, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)}}
	}
	tests := []struct {
		name       string
		annotation string
		noLocal    bool
		conditions []metav1.Condition
		cov        *grants.Coverage
		grace      time.Duration

		mode      planner.HostAccessMode
		reason    string
		granted   bool
		graceEnds time.Time
		message   string // a part of it
	}{
		{name: "no local cluster", noLocal: true, cov: none, mode: planner.HostUnrestricted, reason: planner.HostReasonNoLocalCluster, granted: true},
		{name: "peer rights", annotation: meshv1alpha1.HostAccessPeerRights, cov: none, mode: planner.HostUnrestricted, reason: planner.HostReasonPeerRights, granted: true},
		{name: "peer rights rest on the user, not on grants", annotation: meshv1alpha1.HostAccessPeerRights, cov: narrow,
			mode: planner.HostUnrestricted, reason: planner.HostReasonPeerRights, granted: true},
		{name: "grant covering every network", annotation: meshv1alpha1.HostAccessGrant, cov: covering,
			mode: planner.HostBounded, reason: planner.HostReasonGranted, granted: true, message: "g1, g2"},
		{name: "grant narrowed", annotation: meshv1alpha1.HostAccessGrant, cov: narrow,
			mode: planner.HostBounded, reason: planner.HostReasonNetworksNotGranted, message: "spec.clusters[1].wireguardCIDR 10.4.0.0/16"},
		{name: "grant deleted", annotation: meshv1alpha1.HostAccessGrant, cov: none, mode: planner.HostDenied, reason: planner.HostReasonNoGrant, message: `namespace "ns"`},
		{name: "a record no admission writes: the grants decide", annotation: "everything", cov: none, mode: planner.HostDenied, reason: planner.HostReasonNoGrant},
		{name: "pre-grant mesh covered by a grant", cov: covering, grace: time.Hour, mode: planner.HostBounded, reason: planner.HostReasonGranted, granted: true},
		{name: "pre-grant mesh, first seen", cov: none, grace: time.Hour,
			mode: planner.HostUnrestricted, reason: planner.HostReasonUpgradeGracePeriod, graceEnds: now.Add(time.Hour), message: "2026-11-22T04:00:00Z"},
		{name: "pre-grant mesh, grace running since the condition said so", cov: none, grace: time.Hour,
			conditions: granted(metav1.ConditionFalse, planner.HostReasonUpgradeGracePeriod, now.Add(-59*time.Minute)),
			mode:       planner.HostUnrestricted, reason: planner.HostReasonUpgradeGracePeriod, graceEnds: now.Add(time.Minute)},
		{name: "pre-grant mesh, grace over", cov: none, grace: time.Hour,
			conditions: granted(metav1.ConditionFalse, planner.HostReasonUpgradeGracePeriod, now.Add(-time.Hour)),
			mode:       planner.HostDenied, reason: planner.HostReasonGracePeriodExpired, graceEnds: now},
		{name: "pre-grant mesh, expired before a restart", cov: none, grace: time.Hour,
			conditions: granted(metav1.ConditionFalse, planner.HostReasonGracePeriodExpired, now.Add(-2*time.Hour)),
			mode:       planner.HostDenied, reason: planner.HostReasonGracePeriodExpired, graceEnds: now.Add(-time.Hour)},
		{name: "pre-grant mesh once covered, grant gone: no second grace", cov: none, grace: time.Hour,
			conditions: granted(metav1.ConditionTrue, planner.HostReasonGranted, now.Add(-time.Minute)),
			mode:       planner.HostDenied, reason: planner.HostReasonNoGrant},
		{name: "no grace period at all", cov: none, mode: planner.HostDenied, reason: planner.HostReasonGracePeriodExpired, graceEnds: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mesh := testMesh()
			mesh.Spec.Clusters[1].PodCIDRs = []string{"10.3.0.0/16"}
			if tt.annotation != "" {
				mesh.Annotations = map[string]string{meshv1alpha1.AnnotationHostAccess: tt.annotation}
			}
			if tt.noLocal {
				mesh.Spec.Clusters[0].Local = false
			}
			mesh.Status.Conditions = tt.conditions
			got := hostAccess(mesh, tt.cov, now, tt.grace)
			v := got.View
			if got.Mode != tt.mode || v.Reason != tt.reason || v.Granted != tt.granted {
				t.Fatalf("mode %s, reason %s, granted %v (%s); want %s, %s, %v", got.Mode, v.Reason, v.Granted, v.Message, tt.mode, tt.reason, tt.granted)
			}
			switch {
			case tt.graceEnds.IsZero() && v.GracePeriodEnds != nil:
				t.Errorf("grace period ends at %s", v.GracePeriodEnds)
			case !tt.graceEnds.IsZero() && (v.GracePeriodEnds == nil || !v.GracePeriodEnds.Time.Equal(tt.graceEnds)):
				t.Errorf("grace period ends at %v, want %s", v.GracePeriodEnds, tt.graceEnds)
			}
			if !strings.Contains(v.Message, tt.message) {
				t.Errorf("message %q lacks %q", v.Message, tt.message)
			}
			if got.Mode == planner.HostBounded && (!slices.Equal(got.MemberNetworks, tt.cov.MemberNetworks) || !slices.Equal(v.Grants, tt.cov.Grants)) {
				t.Errorf("bounded by %v (grants %v), want the coverage's %v", got.MemberNetworks, v.Grants, tt.cov.MemberNetworks)
			}
		})
	}
}

// testGrants is a table of coverage by namespace: the cache's bookkeeping
// around grants is what is under test, not their evaluation.
type testGrants struct {
	synced   bool
	cov      map[string]grants.Coverage
	handlers []func(string)
}

func (g *testGrants) Coverage(ns string) (grants.Coverage, error) {
	if !g.synced {
		return grants.Coverage{}, grants.ErrNotSynced
	}
	return g.cov[ns], nil
}
func (g *testGrants) AddChangeHandler(f func(string)) { g.handlers = append(g.handlers, f) }
func (g *testGrants) HasSynced() bool                 { return g.synced }
func (g *testGrants) change(ns string) {
	for _, f := range g.handlers {
		f(ns)
	}
}

// TestCacheFollowsGrants: no plan before the grants are known; a change of
// grants for a namespace replans its meshes, and only those, and tells the
// cache's change handlers.
func TestCacheFollowsGrants(t *testing.T) {
	g := &testGrants{cov: map[string]grants.Coverage{}}
	c, err := New(Config{Members: newMembers(t), Grants: g, GracePeriod: time.Hour, Clock: clocktesting.NewFakePassiveClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	mesh := testMesh()
	mesh.Annotations = map[string]string{meshv1alpha1.AnnotationHostAccess: meshv1alpha1.HostAccessGrant}
	other := testMesh()
	other.Namespace, other.UID = "elsewhere", "uid-9"
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return &meshv1alpha1.ClusterMeshList{}, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewEmptyWatch(), nil },
	}, &meshv1alpha1.ClusterMesh{}, 0, cache.Indexers{})
	for _, m := range []*meshv1alpha1.ClusterMesh{mesh, other} {
		if err := informer.GetStore().Add(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FollowMeshes(informer); err != nil {
		t.Fatal(err)
	}
	var told []types.NamespacedName
	c.AddChangeHandler(func(k types.NamespacedName) { told = append(told, k) })

	if c.HasSynced() {
		t.Error("synced before the grants")
	}
	if _, err := c.Plan(mesh); !errors.Is(err, grants.ErrNotSynced) {
		t.Fatalf("planned without the grants: %v", err)
	}
	g.synced = true
	p, err := c.Plan(mesh)
	if err != nil {
		t.Fatal(err)
	}
	if p.View.HostAccess == nil || p.View.HostAccess.Reason != planner.HostReasonNoGrant {
		t.Fatalf("host access %+v, want NoGrant", p.View.HostAccess)
	}
	g.cov["ns"] = grants.Coverage{Namespace: "ns", Grants: []string{"g"}, MemberNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		LocalNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	g.change("ns")
	if !slices.Equal(told, []types.NamespacedName{{Namespace: "ns", Name: "m"}}) {
		t.Errorf("handlers told of %v, want ns/m alone", told)
	}
	p2, err := c.Plan(mesh)
	if err != nil {
		t.Fatal(err)
	}
	if p2 == p || p2.View.HostAccess.Reason != planner.HostReasonGranted {
		t.Errorf("after the grant: replanned %v, host access %+v", p2 != p, p2.View.HostAccess)
	}
}
