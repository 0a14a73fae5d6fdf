package clusters

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
)

// TestSortedList: after any sequence of store changes, each reported to
// touched as the informer's handler does, list equals a fresh sorted list
// of the store, and a list handed out earlier is never modified.
func TestSortedList(t *testing.T) {
	node := func(name, rv string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	type step struct {
		op   string // add, update, delete, deleteUnknown (a DeletedFinalStateUnknown)
		name string
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"updates in place", []step{{"update", "n05"}, {"update", "n00"}, {"update", "n19"}}},
		{"a node added between others", []step{{"add", "n05a"}}},
		{"a node added first and last", []step{{"add", "a"}, {"add", "z"}}},
		{"a node deleted", []step{{"delete", "n07"}}},
		{"a deletion marker", []step{{"deleteUnknown", "n03"}}},
		{"deleted and added back", []step{{"delete", "n04"}, {"add", "n04"}}},
		{"added, updated and deleted at once", []step{{"add", "m"}, {"update", "m"}, {"update", "n01"}, {"delete", "n02"}}},
		{"many changes: sorted again", []step{{"add", "x1"}, {"add", "x2"}, {"add", "x3"}, {"add", "x4"}, {"add", "x5"}, {"delete", "n00"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			for i := range 20 {
				if err := store.Add(node(fmt.Sprintf("n%02d", i), "1")); err != nil {
					t.Fatal(err)
				}
			}
			l := newSortedList[*corev1.Node]()
			l.store = store
			first := l.list()
			kept := first.Slice()
			for i, s := range c.steps {
				var obj any = node(s.name, fmt.Sprint(i+2))
				var err error
				switch s.op {
				case "add":
					err = store.Add(obj)
				case "update":
					err = store.Update(obj)
				case "delete":
					err = store.Delete(obj)
				case "deleteUnknown":
					err = store.Delete(obj)
					obj = cache.DeletedFinalStateUnknown{Key: s.name, Obj: obj}
				}
				if err != nil {
					t.Fatal(err)
				}
				l.touched(obj)
			}
			got, want := l.list().Slice(), listByKey[*corev1.Node](store)
			if !slices.Equal(got, want) {
				t.Errorf("list = %v, want %v", nodeNames(got), nodeNames(want))
			}
			if !slices.Equal(first.Slice(), kept) {
				t.Errorf("the list handed out before the changes was modified")
			}
		})
	}
}

// TestSortedListRandom drives random changes through a store and its list.
func TestSortedListRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 21))
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	l := newSortedList[*corev1.Node]()
	l.store = store
	for step := range 2000 {
		if step%7 == 0 {
			if got, want := l.list().Slice(), listByKey[*corev1.Node](store); !slices.Equal(got, want) {
				t.Fatalf("step %d: list = %v, want %v", step, nodeNames(got), nodeNames(want))
			}
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%03d", rng.IntN(300)), ResourceVersion: fmt.Sprint(step)}}
		_, exists, _ := store.Get(n)
		var err error
		switch {
		case exists && rng.IntN(4) == 0:
			err = store.Delete(n)
		case exists:
			err = store.Update(n)
		default:
			err = store.Add(n)
		}
		if err != nil {
			t.Fatal(err)
		}
		l.touched(n)
	}
}

func nodeNames(nodes []*corev1.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name + "@" + n.ResourceVersion
	}
	return out
}

// TestSortedListShares: a list read after a few updates shares the rest
// with the list read before them, so that comparing the two (what a plan
// does) reads the names of the nodes updated and one a chunk, not every
// node's.
func TestSortedListShares(t *testing.T) {
	const n = 5000
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for i := range n {
		if err := store.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	l := newSortedList[*corev1.Node]()
	l.store = store
	before := l.list()
	for _, i := range []int{7, 2500, 4999} {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", i), ResourceVersion: "2"}}
		if err := store.Update(obj); err != nil {
			t.Fatal(err)
		}
		l.touched(obj)
	}
	reads, changed := 0, 0
	chunklist.Diff(before, l.list(), func(n *corev1.Node) string { reads++; return n.Name }, func(o, n *corev1.Node) bool {
		changed++
		return true
	})
	if limit := 100; changed != 3 || reads > limit {
		t.Errorf("comparing the lists before and after 3 changes of %d nodes found %d changes, reading %d names; want 3 reading at most %d", n, changed, reads, limit)
	}
}

// BenchmarkSortedList is what a plan pays to read one cluster's Nodes
// after one of them changed ("patched-30": after 30 did): "patched" is sortedList.list, "sorted" the
// list and sort of every object it replaced (listByKey).
func BenchmarkSortedList(b *testing.B) {
	for _, n := range []int{2000, 4000, 10000} {
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		for i := range n {
			if err := store.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", i)}}); err != nil {
				b.Fatal(err)
			}
		}
		l := newSortedList[*corev1.Node]()
		l.store = store
		l.list()
		change := func(i int) {
			obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", i%n), ResourceVersion: fmt.Sprint(i)}}
			if err := store.Update(obj); err != nil {
				b.Fatal(err)
			}
			l.touched(obj)
		}
		b.Run(fmt.Sprintf("%d/patched", n), func(b *testing.B) {
			for i := range b.N {
				change(i)
				l.list()
			}
		})
		// Under Kilo's check-in stream a cache hears of tens of updates
		// between two plans (200 a second at 6 x 1,000).
		b.Run(fmt.Sprintf("%d/patched-30", n), func(b *testing.B) {
			for i := range b.N {
				for k := range 30 {
					change(i*30 + k*(n/30))
				}
				l.list()
			}
		})
		b.Run(fmt.Sprintf("%d/sorted", n), func(b *testing.B) {
			for i := range b.N {
				change(i)
				listByKey[*corev1.Node](store)
			}
		})
	}
}
