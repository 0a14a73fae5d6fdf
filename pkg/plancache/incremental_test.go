package plancache

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// listedMembers holds the member caches' contents as the test sets them:
// the cache's bookkeeping is pure logic over Members' answers.
type listedMembers struct {
	mu     sync.Mutex
	states map[string]clusters.ClusterState
}

func (m *listedMembers) Snapshot(*meshv1alpha1.ClusterMesh) map[string]clusters.ClusterState {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]clusters.ClusterState, len(m.states))
	for k, v := range m.states {
		out[k] = v
	}
	return out
}

func (m *listedMembers) Identities(*meshv1alpha1.ClusterMesh) map[string]string { return nil }

func (m *listedMembers) AddChangeHandler(func(types.NamespacedName)) {}

// edit replaces the state of one cluster; f changes its lists with With and
// Without, as a member cache does.
func (m *listedMembers) edit(cluster string, f func(*clusters.ClusterState)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.states[cluster]
	f(&st)
	m.states[cluster] = st
}

// nodeName and peerName are the keys member caches list Nodes and Peers by.
var nodeName, peerName = chunklist.ByName[*corev1.Node], chunklist.ByName[*kilov1alpha1.Peer]

func kiloNode(name string, i int, now time.Time, key byte) *corev1.Node {
	k := make([]byte, 32)
	k[0], k[1] = key, byte(i)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			kilov1alpha1.AnnotationKey:         base64.StdEncoding.EncodeToString(k),
			kilov1alpha1.AnnotationEndpoint:    fmt.Sprintf("203.0.113.%d:51820", i+1),
			kilov1alpha1.AnnotationLastSeen:    strconv.FormatInt(now.Unix(), 10),
			kilov1alpha1.AnnotationGranularity: "full",
		}},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", key, i)},
	}
}

// TestCacheIncremental: after a change of a node or a Peer, the cache's plan
// is exactly the planner's whole plan of the same input, and it patched the
// last plan where it could: Peers the change does not reach are the last
// plan's own.
func TestCacheIncremental(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	members := &listedMembers{states: map[string]clusters.ClusterState{}}
	mesh := &meshv1alpha1.ClusterMesh{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "uid-1", ResourceVersion: "1"},
		Spec:       meshv1alpha1.ClusterMeshSpec{},
	}
	for c, name := range []string{"a", "b"} {
		mesh.Spec.Clusters = append(mesh.Spec.Clusters, meshv1alpha1.ClusterEntry{
			Name: name, KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: name},
			PodCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", 1+c)}, WireguardCIDR: fmt.Sprintf("10.%d.0.0/16", 101+c),
		})
		var nodes []*corev1.Node
		for i := range 3 {
			nodes = append(nodes, kiloNode(fmt.Sprintf("%s-%d", name, i), i, now, byte(1+c)))
		}
		members.states[name] = clusters.ClusterState{Name: name, Reachable: true, Synced: true, Nodes: chunklist.Sorted(nodes, nodeName)}
	}
	c, err := New(Config{Members: members, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "m"}
	last, err := c.Plan(mesh)
	if err != nil {
		t.Fatal(err)
	}
	peerOn := func(p *planner.Plan, target, node string) *kilov1alpha1.Peer {
		for _, q := range p.DesiredPeers[target].All() {
			if q.Annotations[planner.AnnotationSourceLeader] == node {
				return q
			}
		}
		t.Fatalf("no Peer of node %s on %s", node, target)
		return nil
	}
	for _, tc := range []struct {
		name    string
		change  func()
		patched bool // the Peer of a-2 on b is the last plan's own
	}{
		{"nothing but the clock", func() { clk.SetTime(clk.Now().Add(MaxAge)) }, true},
		{"a node's key", func() {
			members.edit("a", func(s *clusters.ClusterState) {
				first, _ := s.Nodes.Get("a-0", nodeName)
				n := first.DeepCopy()
				n.Annotations[kilov1alpha1.AnnotationKey] = base64.StdEncoding.EncodeToString(slices.Repeat([]byte{9}, 32))
				s.Nodes = s.Nodes.With(n, nodeName)
			})
		}, true},
		{"the reconciler applies the plan on b", func() {
			members.edit("b", func(s *clusters.ClusterState) {
				for _, p := range last.DesiredPeers["b"].All() {
					s.Peers = s.Peers.With(p.DeepCopy(), peerName)
				}
			})
		}, true},
		{"a Peer edited on b", func() {
			members.edit("b", func(s *clusters.ClusterState) {
				p := s.Peers.Slice()[0].DeepCopy()
				p.Spec.PersistentKeepalive = 7
				s.Peers = s.Peers.With(p, peerName)
			})
		}, true},
		{"a node appears: WireGuard IPs are renumbered", func() {
			members.edit("a", func(s *clusters.ClusterState) {
				s.Nodes = s.Nodes.With(kiloNode("a-0a", 7, clk.Now(), 1), nodeName)
			})
		}, false},
		{"b becomes unreachable", func() {
			members.edit("b", func(s *clusters.ClusterState) { s.Reachable, s.LastError = false, "gone" })
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change()
			c.invalidate(key)
			got, err := c.Plan(mesh)
			if err != nil {
				t.Fatal(err)
			}
			in, err := c.input(mesh, clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			want, err := planner.Compute(in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("the cache's plan differs from the whole plan of the same input")
			}
			if patched := peerOn(got, "b", "a-2") == peerOn(last, "b", "a-2"); patched != tc.patched {
				t.Errorf("patched the last plan: %v, want %v", patched, tc.patched)
			}
			last = got
		})
	}
}
