package reconciler

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// writes is a member cluster's Peer client that counts writes and answers
// each with the next resourceVersion.
type writes struct {
	applies, deletes atomic.Int32
	rv               atomic.Int64
	// conn names the connection ("writes" when empty).
	conn string
}

var _ clusters.PeerClient = (*writes)(nil)

func (w *writes) Apply(context.Context, *kilov1alpha1.Peer, metav1.ApplyOptions) (clusters.WrittenPeer, error) {
	w.applies.Add(1)
	return clusters.WrittenPeer{ResourceVersion: "w" + strconv.FormatInt(w.rv.Add(1), 10)}, nil
}

func (w *writes) Update(_ context.Context, p *kilov1alpha1.Peer, _ metav1.UpdateOptions) (clusters.WrittenPeer, error) {
	return clusters.WrittenPeer{ResourceVersion: p.ResourceVersion}, nil
}

func (w *writes) Connection() string {
	if w.conn == "" {
		return "writes"
	}
	return w.conn
}

func (w *writes) Delete(context.Context, string, metav1.DeleteOptions) error {
	w.deletes.Add(1)
	return nil
}

// TestSecondPassFromAStaleCache: a pass that starts before the member
// cache has seen the previous pass's writes, with the plan made before
// them, writes nothing again, and asks to be looked at soon; once the cache
// shows the writes, nothing is written either; a Peer someone else changed
// since, or a plan that wants something else, is written.
func TestSecondPassFromAStaleCache(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "uid-1"}}
	peer := func(name, endpoint, rv string) *kilov1alpha1.Peer {
		p := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("u-" + name), ResourceVersion: rv,
			Labels: planner.ManagedLabels("ns", "m", "uid-1", "eu")}}
		p.Spec.PublicKey = endpoint
		return p
	}
	updated, created, dropped := peer("updated", "new", ""), peer("created", "new", ""), peer("dropped", "old", "3")
	stale := map[string]*kilov1alpha1.Peer{"updated": peer("updated", "old", "1"), "dropped": dropped}
	target := &meshv1alpha1.TargetPlan{Create: []string{"created"}, Update: []meshv1alpha1.PeerUpdate{{Name: "updated"}}, Delete: []string{"dropped"}}
	desired := []*kilov1alpha1.Peer{created, updated} // sorted by name, as a plan holds them
	written := newWrittenPeers()
	pass := func(cached map[string]*kilov1alpha1.Peer, desired []*kilov1alpha1.Peer) (*writes, targetResult) {
		client := &writes{}
		res := applyTarget(context.Background(), targetWork{mesh: mesh, cluster: "eu", target: target, desired: planner.PeerListOf(desired...),
			cached: cached, client: client, written: written, writer: newFairWriter()})
		return client, res
	}

	first, res := pass(stale, desired)
	if first.applies.Load() != 2 || first.deletes.Load() != 1 || res.applied != 2 || res.unseen {
		t.Fatalf("first pass: %d applies, %d deletes, %+v", first.applies.Load(), first.deletes.Load(), res)
	}
	second, res := pass(stale, desired)
	if second.applies.Load() != 0 || second.deletes.Load() != 0 || res.applied != 2 || !res.unseen {
		t.Errorf("second pass on the stale cache: %d applies, %d deletes, %+v", second.applies.Load(), second.deletes.Load(), res)
	}

	// The cache has seen the writes (their resourceVersions), the plan is
	// still the old one.
	seen := map[string]*kilov1alpha1.Peer{}
	for k := range written.m {
		if w := written.m[k]; w.want != nil {
			seen[k.peer] = peer(k.peer, "new", w.after)
		}
	}
	third, res := pass(seen, desired)
	if third.applies.Load() != 0 || third.deletes.Load() != 0 || res.unseen {
		t.Errorf("pass on the caught-up cache with the old plan: %d applies, %d deletes, %+v", third.applies.Load(), third.deletes.Load(), res)
	}

	// Someone edited the updated Peer since; and the plan wants something
	// else for the created one: both are written.
	edited := map[string]*kilov1alpha1.Peer{"updated": peer("updated", "edited", "99"), "created": seen["created"]}
	changed := []*kilov1alpha1.Peer{peer("created", "newer", ""), updated}
	fourth, _ := pass(edited, changed)
	if fourth.applies.Load() != 2 {
		t.Errorf("an edited Peer and a new plan: %d applies, want 2", fourth.applies.Load())
	}

	// Past writeMemory, a cache that never caught up is written again.
	written.now = func() time.Time { return time.Now().Add(2 * writeMemory) }
	fifth, _ := pass(stale, desired)
	if fifth.applies.Load() != 2 || fifth.deletes.Load() != 1 {
		t.Errorf("after writeMemory: %d applies, %d deletes", fifth.applies.Load(), fifth.deletes.Load())
	}
	written.forget(types.NamespacedName{Namespace: "ns", Name: "m"})
	if len(written.m) != 0 {
		t.Errorf("forget left %d writes", len(written.m))
	}
}

// TestWritesOfAnotherConnection: an entry whose Secret now reaches another
// cluster gets the Peers written there, even right after they were written
// through the old connection: those writes are not the new cluster's, and
// counting them as done would report Peers applied that it does not hold.
func TestWritesOfAnotherConnection(t *testing.T) {
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "uid-1"}}
	desired := []*kilov1alpha1.Peer{{ObjectMeta: metav1.ObjectMeta{Name: "east", Labels: planner.ManagedLabels("ns", "m", "uid-1", "east")}}}
	target := &meshv1alpha1.TargetPlan{Create: []string{"east"}}
	written := newWrittenPeers()
	at := time.Now()
	written.now = func() time.Time { return at } // well within writeMemory
	pass := func(conn string) (*writes, targetResult) {
		client := &writes{conn: conn}
		res := applyTarget(context.Background(), targetWork{mesh: mesh, cluster: "west", target: target, desired: planner.PeerListOf(desired...),
			cached: map[string]*kilov1alpha1.Peer{}, client: client, written: written, writer: newFairWriter()})
		return client, res
	}
	for _, c := range []struct {
		name    string
		conn    string
		applies int32
		unseen  bool
	}{
		{"the first write", "https://old#a", 1, false},
		{"again through the same connection, before its cache shows it", "https://old#a", 0, true},
		{"through the connection the repointed Secret reaches", "https://new#b", 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, res := pass(c.conn)
			if client.applies.Load() != c.applies || res.applied != 1 || res.unseen != c.unseen {
				t.Errorf("%d applies, %+v; want %d applies, 1 applied, unseen %v", client.applies.Load(), res.targetOutcome, c.applies, c.unseen)
			}
		})
	}
}

// TestWriteEchoes: only a Peer at the resourceVersion an apply of this
// replica answered with, on the connection it went through, within
// writeMemory, is that write's echo; anyone else's change is not.
func TestWriteEchoes(t *testing.T) {
	mesh := types.NamespacedName{Namespace: "ns", Name: "m"}
	at := time.Unix(5000, 0)
	written := newWrittenPeers()
	written.now = func() time.Time { return at }
	applied := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "applied"}}
	written.remember(writtenPeerKey{mesh: mesh, cluster: "eu", peer: "applied"}, "conn-eu", applied, "1", "2")
	written.remember(writtenPeerKey{mesh: mesh, cluster: "eu", peer: "deleted"}, "conn-eu", nil, "3", "")
	seen := func(name, rv string) *kilov1alpha1.Peer {
		return &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	for _, c := range []struct {
		name  string
		conn  string
		peer  *kilov1alpha1.Peer
		later time.Duration
		echo  bool
	}{
		{"the apply's answer", "conn-eu", seen("applied", "2"), 0, true},
		{"a later write by someone else", "conn-eu", seen("applied", "5"), 0, false},
		{"the Peer the apply replaced", "conn-eu", seen("applied", "1"), 0, false},
		{"the same name through another connection", "conn-us", seen("applied", "2"), 0, false},
		{"a Peer this replica deleted, recreated", "conn-eu", seen("deleted", "3"), 0, false},
		{"a Peer never written", "conn-eu", seen("other", "2"), 0, false},
		{"the apply's answer after writeMemory", "conn-eu", seen("applied", "2"), 2 * writeMemory, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			written.now = func() time.Time { return at.Add(c.later) }
			k, answered, echo := written.shows(c.conn, c.peer)
			if echo != c.echo {
				t.Fatalf("echo = %v, want %v", echo, c.echo)
			}
			if echo && (k != writtenPeerKey{mesh: mesh, cluster: "eu", peer: "applied"} || !answered.Equal(at)) {
				t.Errorf("echo of %+v answered at %s, want the apply's key and %s", k, answered, at)
			}
		})
	}
	t.Run("shown before the answer", func(t *testing.T) {
		written.now = func() time.Time { return at }
		k := writtenPeerKey{mesh: mesh, cluster: "eu", peer: "racing"}
		want := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "racing"}, Spec: kilov1alpha1.PeerSpec{PublicKey: "ours"}}
		other := want.DeepCopy()
		other.Spec.PublicKey = "someone else's"
		written.begin(k, "conn-eu", want)
		if _, _, echo := written.shows("conn-eu", other); echo {
			t.Error("another Peer of the name, while the apply is in flight, was taken for its echo")
		}
		shown := want.DeepCopy()
		shown.ResourceVersion = "7"
		got, answered, echo := written.shows("conn-eu", shown)
		if !echo || got != k || !answered.IsZero() {
			t.Errorf("the applied Peer before the answer: echo %v of %+v answered %s, want an echo of %+v not answered yet", echo, got, answered, k)
		}
		if !written.remember(k, "conn-eu", want, "", "7") {
			t.Error("the answer did not report the echo seen before it")
		}
		if _, _, echo := written.shows("conn-eu", other); echo {
			t.Error("another Peer of the name, after the answer, was taken for its echo")
		}
	})
	t.Run("a failed apply", func(t *testing.T) {
		k := writtenPeerKey{mesh: mesh, cluster: "eu", peer: "failing"}
		want := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "failing"}}
		written.begin(k, "conn-eu", want)
		written.abandon(k, "conn-eu")
		if _, _, echo := written.shows("conn-eu", want); echo {
			t.Error("a Peer like the one a failed apply sent was taken for its echo")
		}
	})
	written.forget(mesh)
	if len(written.m) != 0 || len(written.byConn) != 0 || len(written.inflight) != 0 {
		t.Errorf("forget left %d writes, %d by connection, %d in flight", len(written.m), len(written.byConn), len(written.inflight))
	}
}

// TestWriteDeletedSince: a Peer this replica created and a member cache
// then showed, gone from the cache since, was deleted by someone else:
// the next pass writes it again at once, rather than taking the create
// as not seen yet and waiting out writeMemory. A create the cache has not
// shown yet is still done.
func TestWriteDeletedSince(t *testing.T) {
	want := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	want.Spec.PublicKey = "k"
	k := writtenPeerKey{mesh: types.NamespacedName{Namespace: "ns", Name: "m"}, cluster: "eu", peer: "p"}
	for _, c := range []struct {
		name     string
		echo     string // "": none; "early": before the answer; "late": after it
		wantDone bool
	}{
		{"the create not shown yet", "", true},
		{"shown before its answer, deleted since", "early", false},
		{"shown after its answer, deleted since", "late", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newWrittenPeers()
			shown := want.DeepCopy()
			shown.ResourceVersion = "7"
			r.begin(k, "conn", want)
			if c.echo == "early" {
				if _, _, ok := r.shows("conn", shown); !ok {
					t.Fatal("the early echo was not recognised")
				}
			}
			r.remember(k, "conn", want, "", "7")
			if c.echo == "late" {
				if _, _, ok := r.shows("conn", shown); !ok {
					t.Fatal("the echo was not recognised")
				}
			}
			if done, _ := r.done(k, "conn", want, nil); done != c.wantDone {
				t.Errorf("done = %v with the Peer gone from the cache, want %v", done, c.wantDone)
			}
		})
	}
}

// TestOldWritesForgotten: writes older than writeMemory are forgotten by
// the next write or pass, whether or not their Peers are looked at again.
func TestOldWritesForgotten(t *testing.T) {
	mesh := types.NamespacedName{Namespace: "ns", Name: "m"}
	at := time.Unix(5000, 0)
	written := newWrittenPeers()
	written.now = func() time.Time { return at }
	for i := range 1000 {
		name := fmt.Sprintf("p%d", i)
		written.remember(writtenPeerKey{mesh: mesh, cluster: "eu", peer: name}, "conn-eu", &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: name}}, "", "2")
	}
	written.now = func() time.Time { return at.Add(2 * writeMemory) }
	written.remember(writtenPeerKey{mesh: mesh, cluster: "eu", peer: "later"}, "conn-eu", &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, "", "3")
	if len(written.m) != 1 || len(written.byConn) != 1 {
		t.Errorf("%d writes and %d by connection remembered, want only the later one", len(written.m), len(written.byConn))
	}
}
