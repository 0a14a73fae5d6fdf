package clusters

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

func TestSharedBudget(t *testing.T) {
	const mib = 1 << 20
	type use struct {
		namespaces []string
		weight     int64
	}
	for _, tc := range []struct {
		name         string
		total, perNS int64
		// held are clusters already kept; the last of them is checked at
		// weight want.
		held     []use
		check    use
		wantErr  bool
		wantText string
	}{
		{name: "within the namespace's share", total: 100 * mib, perNS: 50 * mib,
			held: []use{{[]string{"a"}, 30 * mib}}, check: use{[]string{"a"}, 20 * mib}},
		{name: "over the namespace's share", total: 100 * mib, perNS: 50 * mib,
			held: []use{{[]string{"a"}, 30 * mib}}, check: use{[]string{"a"}, 21 * mib}, wantErr: true, wantText: "--max-namespace-member-cache-mib"},
		{name: "another namespace's clusters do not count", total: 100 * mib, perNS: 50 * mib,
			held: []use{{[]string{"b"}, 50 * mib}}, check: use{[]string{"a"}, 50 * mib}},
		{name: "a cluster shared with a namespace that has room is kept", total: 100 * mib, perNS: 50 * mib,
			held: []use{{[]string{"a"}, 40 * mib}}, check: use{[]string{"a", "b"}, 20 * mib}},
		{name: "the total taken, the newcomer within its fair share", total: 100 * mib, perNS: 50 * mib,
			held: []use{{[]string{"a"}, 50 * mib}, {[]string{"b"}, 50 * mib}}, check: use{[]string{"c"}, 30 * mib}},
		{name: "the total taken, the newcomer over its fair share", total: 100 * mib, perNS: 50 * mib,
			held: []use{{[]string{"a"}, 50 * mib}, {[]string{"b"}, 50 * mib}}, check: use{[]string{"c"}, 34 * mib},
			wantErr: true, wantText: "fair share of 33 MiB"},
		{name: "never more than twice the total", total: 100 * mib, perNS: 100 * mib,
			held: []use{{[]string{"a"}, 100 * mib}, {[]string{"b"}, 50 * mib}, {[]string{"c"}, 33 * mib}}, check: use{[]string{"d"}, 20 * mib},
			wantErr: true, wantText: "fair share"},
		{name: "no limits", held: []use{{[]string{"a"}, 1 << 40}}, check: use{[]string{"a"}, 1 << 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSharedBudget(tc.total, tc.perNS)
			for _, h := range append(tc.held, use{namespaces: tc.check.namespaces}) {
				b := newBudget(1 << 50)
				b.shared = s
				for _, ns := range h.namespaces {
					s.use(b, ns)
				}
				b.set(resourceNodes, h.weight)
				if h.weight == 0 {
					err := b.charge(resourceNodes, tc.check.weight)
					if (err != nil) != tc.wantErr || (err != nil && (err.Reason != memberaccess.ErrNamespaceBudgetExceeded || !strings.Contains(err.Message, tc.wantText))) {
						t.Errorf("check(%d MiB) = %v, want an error %v with %q", tc.check.weight/mib, err, tc.wantErr, tc.wantText)
					}
				}
			}
		})
	}
}

// TestSharedBudgetRelease: what a namespace holds leaves the budget with
// its last binding, and a cluster with its last namespace.
func TestSharedBudgetRelease(t *testing.T) {
	const mib = 1 << 20
	s := newSharedBudget(100*mib, 50*mib)
	b := newBudget(1 << 30)
	b.shared = s
	s.use(b, "a")
	s.use(b, "a")
	s.use(b, "b")
	b.set(resourceNodes, 40*mib)
	b.set(resourcePeers, 5*mib)
	if s.sum != 45*mib || s.namespaces["a"].weight != 45*mib || s.namespaces["b"].weight != 45*mib {
		t.Fatalf("sum %d, a %d, b %d", s.sum, s.namespaces["a"].weight, s.namespaces["b"].weight)
	}
	s.release(b, "a")
	if s.namespaces["a"] == nil {
		t.Fatal("a released with a binding left")
	}
	s.release(b, "a")
	s.release(b, "b")
	if len(s.namespaces) != 0 || len(s.clusters) != 0 || s.sum != 0 {
		t.Errorf("left: %d namespaces, %d clusters, %d bytes", len(s.namespaces), len(s.clusters), s.sum)
	}
	b.set(resourceNodes, 10*mib) // an informer still stopping
	if len(s.clusters) != 0 || s.sum != 0 {
		t.Error("a released cluster charged again")
	}
}

// TestObjectLimitNamespaceBudget: a list that takes the namespace over its
// share stops there, says why, and leaves the budget as it found it.
func TestObjectLimitNamespaceBudget(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := newSharedBudget(64<<20, 8<<20)
	other := newBudget(1 << 30)
	other.shared = s
	s.use(other, "tenant")
	other.set(resourceNodes, 5<<20)
	b := newBudget(1 << 30)
	b.shared = s
	s.use(b, "tenant")
	f := &fakeNodes{n: 1000, fat: 4 << 10} // about 4.5 MiB
	_, err := f.limit(2000, b, clk).List(context.Background(), metav1.ListOptions{})
	if !errors.Is(err, memberaccess.ErrNamespaceBudgetExceeded) || !strings.Contains(err.Error(), "8 MiB") || strings.Contains(err.Error(), "tenant") {
		t.Fatalf("got %v", err)
	}
	if f.lists > 2 {
		t.Errorf("read %d pages past the share", f.lists)
	}
	if s.sum != 5<<20 {
		t.Errorf("the refused list still charged: %d bytes in all", s.sum)
	}
	other.set(resourceNodes, 1<<20)
	clk.Step(overLimitRetry)
	if _, err := f.limit(2000, b, clk).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("within the share: %v", err)
	}
}
