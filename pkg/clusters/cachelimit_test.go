package clusters

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// fakeNodes serves n Nodes in pages as an API server would; fat makes each
// carry a label of that many bytes.
type fakeNodes struct {
	n, fat   int
	lists    int // pages served
	oversize bool
}

func (f *fakeNodes) node(i int) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%05d", i), ResourceVersion: "1",
		Labels:      map[string]string{"topology.kubernetes.io/region": "eu"},
		Annotations: map[string]string{"kilo.squat.ai/key": "k", "node.alpha.kubernetes.io/ttl": "0"}},
		Spec:   corev1.NodeSpec{PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{strings.Repeat("i", 1000)}}}}}
	if f.fat > 0 {
		n.Labels["fat"] = strings.Repeat("x", f.fat)
	}
	return n
}

func (f *fakeNodes) limit(maxNodes int, b *budget, clk *clocktesting.FakeClock) *objectLimit {
	l := nodeLimit(nil, maxNodes, b, clk)
	l.listPage = func(_ context.Context, o metav1.ListOptions) (metav1.ListMeta, []runtime.Object, error) {
		f.lists++
		start := 0
		if o.Continue != "" {
			start, _ = strconv.Atoi(o.Continue)
		}
		size := int(o.Limit)
		if f.oversize {
			size++
		}
		var items []runtime.Object
		for i := start; i < f.n && i < start+size; i++ {
			items = append(items, f.node(i))
		}
		m := metav1.ListMeta{ResourceVersion: "10"}
		if start+size < f.n {
			m.Continue = strconv.Itoa(start + size)
		}
		return m, items, nil
	}
	return l
}

func TestObjectLimitList(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	t.Run("paged and cut down", func(t *testing.T) {
		f := &fakeNodes{n: 1234}
		obj, err := f.limit(2000, nil, clk).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		list := obj.(*corev1.NodeList)
		if len(list.Items) != 1234 || f.lists != 3 || list.ResourceVersion != "10" || list.Continue != "" {
			t.Fatalf("%d items in %d pages, rv %q continue %q", len(list.Items), f.lists, list.ResourceVersion, list.Continue)
		}
		if n := list.Items[7]; len(n.Status.Images) != 0 || n.Annotations["node.alpha.kubernetes.io/ttl"] != "" || n.Annotations["kilo.squat.ai/key"] != "k" {
			t.Errorf("not cut down: %+v", n)
		}
	})
	t.Run("a page larger than asked for", func(t *testing.T) {
		f := &fakeNodes{n: 600, oversize: true}
		if _, err := f.limit(2000, nil, clk).List(context.Background(), metav1.ListOptions{}); !errors.Is(err, memberaccess.ErrListWatch) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("too many, not counted again for a while", func(t *testing.T) {
		f := &fakeNodes{n: 1001}
		l := f.limit(1000, nil, clk)
		_, err := l.List(context.Background(), metav1.ListOptions{})
		if !errors.Is(err, memberaccess.ErrTooManyNodes) || !strings.Contains(err.Error(), "--max-member-nodes") {
			t.Fatalf("got %v", err)
		}
		pages := f.lists
		if _, again := l.List(context.Background(), metav1.ListOptions{}); again != err || f.lists != pages {
			t.Errorf("listed again at once: %v, %d pages", again, f.lists-pages)
		}
		f.n = 1000
		clk.Step(overLimitRetry)
		if _, err := l.List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("after the retry period, under the limit: %v", err)
		}
	})
	t.Run("heavy Nodes are stubs", func(t *testing.T) {
		f := &fakeNodes{n: 700, fat: 100 << 10}
		b := newBudget(8 << 20)
		obj, err := f.limit(2000, b, clk).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("70 MB of labels, cut to stubs, within 8 MiB: %v", err)
		}
		n := obj.(*corev1.NodeList).Items[0]
		if n.Annotations[meshv1alpha1.AnnotationNodeTooLarge] == "" || n.Labels != nil {
			t.Errorf("not a stub: %+v", n.ObjectMeta)
		}
	})
	t.Run("the budget, Nodes and Peers together", func(t *testing.T) {
		b := newBudget(8 << 20)
		b.set(resourcePeers, 5<<20)
		f := &fakeNodes{n: 1000, fat: 4 << 10} // about 4.5 MiB
		_, err := f.limit(2000, b, clk).List(context.Background(), metav1.ListOptions{})
		if !errors.Is(err, memberaccess.ErrCacheBudgetExceeded) || !strings.Contains(err.Error(), "8 MiB") {
			t.Fatalf("got %v", err)
		}
		b.set(resourcePeers, 1<<20)
		clk.Step(overLimitRetry)
		if _, err := f.limit(2000, b, clk).List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("within the budget: %v", err)
		}
	})
}

func TestObjectLimitWatch(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f := &fakeNodes{n: 3}
	l := f.limit(4, nil, clk)
	heard := 0
	l.heard = func() { heard++ }
	if _, err := l.List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	event := func(typ watch.EventType, obj runtime.Object) watch.Event {
		t.Helper()
		e, ok := l.counted(watch.Event{Type: typ, Object: obj})
		if !ok {
			t.Fatal("event dropped")
		}
		return e
	}
	if e := event(watch.Added, f.node(3)); e.Type != watch.Added || len(e.Object.(*corev1.Node).Status.Images) != 0 {
		t.Errorf("the fourth Node: %v, not cut down", e.Type)
	}
	event(watch.Modified, f.node(3))
	if e := event(watch.Added, f.node(4)); e.Type != watch.Error || e.Object.(*metav1.Status).Code != 410 {
		t.Fatalf("the fifth Node: %+v, want the end of the watch", e)
	}
	event(watch.Deleted, f.node(0))
	event(watch.Deleted, f.node(1))
	if e := event(watch.Added, f.node(5)); e.Type != watch.Added {
		t.Errorf("after deletions: %v", e.Type)
	}
	member := &metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: "MemberText", Message: "SECRET-BODY of the member"}
	e := event(watch.Error, member)
	if s := e.Object.(*metav1.Status); strings.Contains(s.Message, "SECRET") || s.Reason != metav1.StatusReasonUnknown || s.Code != 500 {
		t.Errorf("a member's error event passed on as %+v", s)
	}
	if member.Message != "SECRET-BODY of the member" {
		t.Error("the event's object was modified in place")
	}
	event(watch.Bookmark, &corev1.Node{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "20"}})
	// Each object event is evidence of a live server for the probe; errors
	// and bookmarks are not.
	if heard != 6 {
		t.Errorf("heard of %d events, want the 6 object events", heard)
	}
}

func TestPeerLimitCount(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := newBudget(1 << 30)
	l := peerLimit(nil, 2, b, clk, nil)
	for i := range 2 {
		p := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}, Spec: kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.0.0.1/32"}}}
		if e, _ := l.counted(watch.Event{Type: watch.Added, Object: p}); e.Type != watch.Added {
			t.Fatalf("Peer %d: %v", i, e.Type)
		}
	}
	e, _ := l.counted(watch.Event{Type: watch.Added, Object: &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "2"}}})
	if s, ok := e.Object.(*metav1.Status); !ok || !strings.Contains(s.Message, "--max-member-peers") {
		t.Errorf("a third Peer over a limit of two: %+v", e)
	}
	if b.used[resourcePeers] == 0 {
		t.Error("the Peers' weight is not in the budget")
	}
}
