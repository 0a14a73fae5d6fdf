package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

func TestWithoutStrays(t *testing.T) {
	endpoint := &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.1"}, Port: 51820}
	other := &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.9"}, Port: 51820}
	peer := func(keepalive int, e *kilov1alpha1.PeerEndpoint) *kilov1alpha1.Peer {
		return &kilov1alpha1.Peer{
			ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "7", Finalizers: []string{"example.com/keep"}},
			Spec:       kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.0.0.0/24"}, PublicKey: "k", PersistentKeepalive: keepalive, Endpoint: e},
		}
	}
	for _, c := range []struct {
		name       string
		want, live *kilov1alpha1.Peer
		fixed      *kilov1alpha1.Peer // nil: nothing stray
	}{
		{"same", peer(0, endpoint), peer(0, endpoint), nil},
		{"values the apply set", peer(5, endpoint), peer(5, endpoint), nil},
		{"keepalive set by someone else", peer(0, endpoint), peer(7, endpoint), peer(0, endpoint)},
		{"endpoint set on a roaming Peer", peer(25, nil), peer(25, other), peer(25, nil)},
		{"both", peer(0, nil), peer(3, other), peer(0, nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.live.DeepCopy()
			keepalive, endpoint := strays(c.want, c.live.Spec.PersistentKeepalive != 0, c.live.Spec.Endpoint != nil)
			if ok := keepalive || endpoint; ok != (c.fixed != nil) {
				t.Fatalf("stray fields found = %v, want %v", ok, c.fixed != nil)
			}
			if c.fixed == nil {
				return
			}
			if fixed := withoutStrays(c.live, keepalive, endpoint); !equality.Semantic.DeepEqual(fixed, c.fixed) {
				t.Errorf("fixed = %+v, want %+v (metadata kept)", fixed, c.fixed)
			}
			if !equality.Semantic.DeepEqual(before, c.live) {
				t.Error("withoutStrays modified the live object")
			}
		})
	}
}

var _ clusters.PeerClient = (*deletes)(nil)

// deletes is a member cluster's Peer client as far as deletes go: it
// counts them, the most at once, and answers with err.
type deletes struct {
	err         error
	calls, busy atomic.Int32
	mu          sync.Mutex
	most        int32
}

func (d *deletes) Delete(context.Context, string, metav1.DeleteOptions) error {
	d.calls.Add(1)
	n := d.busy.Add(1)
	defer d.busy.Add(-1)
	d.mu.Lock()
	d.most = max(d.most, n)
	d.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	return d.err
}

func (d *deletes) Update(context.Context, *kilov1alpha1.Peer, metav1.UpdateOptions) (clusters.WrittenPeer, error) {
	return clusters.WrittenPeer{}, errors.New("not a delete")
}

func (d *deletes) Apply(context.Context, *kilov1alpha1.Peer, metav1.ApplyOptions) (clusters.WrittenPeer, error) {
	return clusters.WrittenPeer{}, errors.New("not a delete")
}

func (d *deletes) Connection() string { return "deletes" }

// TestDeleteOwned: the delete half of a pass writes at most
// writeParallelism at once, touches only the mesh's Peers, goes on past
// refusals, and stops at the first failure the cluster did not answer.
func TestDeleteOwned(t *testing.T) {
	mesh := testMesh()
	mesh.UID = "uid-1"
	const owned = 5 * writeParallelism
	cached := map[string]*kilov1alpha1.Peer{}
	var names []string
	for i := range owned {
		name := fmt.Sprintf("p%d", i)
		cached[name] = &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "u",
			Labels: planner.ManagedLabels("ns", "m", "uid-1", "eu")}}
		names = append(names, name)
	}
	cached["foreign"] = &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}}
	cached["earlier"] = &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "earlier", Labels: planner.ManagedLabels("ns", "m", "uid-0", "eu")}}
	names = append(names, "foreign", "earlier", "gone")

	for _, c := range []struct {
		name    string
		err     error
		deleted int
		calls   func(int32) bool
		errors  string
	}{
		{"every Peer of the mesh", nil, owned, func(n int32) bool { return n == owned }, ""},
		{"refused: every delete tried", apierrors.NewForbidden(kilov1alpha1.PeerResource.GroupResource(), "p", errors.New("no")), 0,
			func(n int32) bool { return n == owned }, "forbidden"},
		{"no answer: the rest skipped", errors.New("dial tcp 127.0.0.1:1: connection refused"), 0,
			func(n int32) bool { return n <= 2*writeParallelism }, "more writes not attempted: the cluster stopped answering"},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := &deletes{err: c.err}
			p := newTargetPass(context.Background(), targetWork{mesh: mesh, cluster: "us", cached: cached, client: client, writer: newFairWriter()})
			p.deleteOwned(names)
			res := p.wait()
			if res.deleted != c.deleted || !c.calls(client.calls.Load()) {
				t.Errorf("deleted %d with %d calls", res.deleted, client.calls.Load())
			}
			if client.most > writeParallelism || client.most < 2 {
				t.Errorf("%d deletes at once, want 2 to %d", client.most, writeParallelism)
			}
			if all := strings.Join(res.errors, "\n"); c.errors == "" && all != "" || !strings.Contains(all, c.errors) {
				t.Errorf("errors %q, want %q", all, c.errors)
			}
		})
	}
}
