package reconciler

import (
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func gateMesh(name, uid string) *meshv1alpha1.ClusterMesh {
	return &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: name, UID: types.UID(uid)}}
}

func TestEventGate(t *testing.T) {
	a, b := gateMesh("a", "1"), gateMesh("b", "2")
	// step is one event, or time passing (wait), or the mesh a forgotten.
	type step struct {
		mesh   *meshv1alpha1.ClusterMesh
		typ    string
		events int
		wait   time.Duration
		forget bool
	}
	tests := []struct {
		name  string
		steps []step
		want  int // events that reach the recorder at the last step
	}{
		{"a burst passes", []step{{mesh: a, typ: corev1.EventTypeNormal, events: eventBurst}}, eventBurst},
		{"beyond the burst nothing passes", []step{{mesh: a, typ: corev1.EventTypeNormal, events: eventBurst}, {mesh: a, typ: corev1.EventTypeNormal, events: 5}}, 0},
		{"not before five minutes", []step{{mesh: a, typ: corev1.EventTypeNormal, events: eventBurst}, {wait: 299 * time.Second}, {mesh: a, typ: corev1.EventTypeNormal, events: 5}}, 0},
		{"one every five minutes", []step{{mesh: a, typ: corev1.EventTypeNormal, events: eventBurst}, {wait: 300 * time.Second}, {mesh: a, typ: corev1.EventTypeNormal, events: 5}}, 1},
		{"each type has its own", []step{{mesh: a, typ: corev1.EventTypeNormal, events: eventBurst}, {mesh: a, typ: corev1.EventTypeWarning, events: 3}}, 3},
		{"each mesh has its own", []step{{mesh: a, typ: corev1.EventTypeNormal, events: eventBurst}, {mesh: b, typ: corev1.EventTypeNormal, events: 3}}, 3},
		{"a mesh made again starts afresh", []step{{mesh: a, typ: corev1.EventTypeNormal, events: eventBurst}, {mesh: gateMesh("a", "3"), typ: corev1.EventTypeNormal, events: 3}}, 3},
		{"a forgotten mesh starts afresh", []step{{mesh: a, typ: corev1.EventTypeNormal, events: eventBurst}, {forget: true}, {mesh: a, typ: corev1.EventTypeNormal, events: 3}}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Now())
			rec := record.NewFakeRecorder(1000)
			g := newEventGate(rec, clk)
			got := 0
			for _, s := range tt.steps {
				clk.SetTime(clk.Now().Add(s.wait))
				if s.forget {
					g.forget(types.NamespacedName{Namespace: "t1", Name: "a"})
				}
				got = len(rec.Events)
				for range s.events {
					g.Event(s.mesh, s.typ, EventPeersChanged, "m")
				}
				got = len(rec.Events) - got
			}
			if got != tt.want {
				t.Errorf("%d events reached the recorder at the last step, want %d", got, tt.want)
			}
		})
	}
}

// TestEventGateDropsWhatTheRecorderWould runs random events through the
// gate and through client-go's spam filter with the options the
// broadcaster is given: the gate must drop exactly what the filter would.
func TestEventGateDropsWhatTheRecorderWould(t *testing.T) {
	start := time.Now()
	clk := clocktesting.NewFakePassiveClock(start)
	g := newEventGate(record.NewFakeRecorder(100000), clk)
	spam := record.NewEventSourceObjectSpamFilter(4096, eventBurst, eventQPS, clk, func(e *corev1.Event) string {
		return string(e.InvolvedObject.UID) + "/" + e.Type
	})
	meshes := []*meshv1alpha1.ClusterMesh{gateMesh("a", "1"), gateMesh("b", "2")}
	types := []string{corev1.EventTypeNormal, corev1.EventTypeWarning}
	rng := rand.New(rand.NewPCG(1, 2))
	passed := 0
	for i := range 20000 {
		clk.SetTime(clk.Now().Add(time.Duration(rng.IntN(200)) * time.Millisecond))
		m, typ := meshes[rng.IntN(2)], types[rng.IntN(2)]
		e := &corev1.Event{Type: typ, InvolvedObject: corev1.ObjectReference{UID: m.UID}}
		want := !spam.Filter(e)
		if got := g.allow(m, typ); got != want {
			t.Fatalf("event %d (%s, %s) at %s: gate passes %v, the recorder's filter %v", i, m.Name, typ, clk.Now().Sub(start), got, want)
		}
		if want {
			passed++
		}
	}
	// 20,000 events in about 33 minutes: the bursts and a few refills.
	if passed < 4*eventBurst || passed > 4*eventBurst+4*8 {
		t.Errorf("%d events passed, want the four bursts and at most eight refills each", passed)
	}
}
