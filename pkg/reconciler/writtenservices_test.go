package reconciler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestServicesWrites: an object in a member cache is an echo exactly when
// it is the answer of a remembered write (connection, kind, name and
// resourceVersion), within writeMemory, and only once.
func TestServicesWrites(t *testing.T) {
	mesh := types.NamespacedName{Namespace: "ns", Name: "m"}
	svc := func(name, rv string) metav1.Object {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name       string
		conn, kind string
		obj        metav1.Object
		after      time.Duration
		want       bool
	}{
		{"the answer itself", "c1", "Service", svc("derived-a", "7"), 0, true},
		{"another resourceVersion", "c1", "Service", svc("derived-a", "8"), 0, false},
		{"another connection", "c2", "Service", svc("derived-a", "7"), 0, false},
		{"another kind", "c1", "EndpointSlice", svc("derived-a", "7"), 0, false},
		{"another name", "c1", "Service", svc("derived-b", "7"), 0, false},
		{"too late", "c1", "Service", svc("derived-a", "7"), writeMemory + time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
			w := newWrittenServices()
			w.now = func() time.Time { return now }
			w.remember("c1", "Service", mesh, svc("derived-a", "7"))
			now = now.Add(tc.after)
			got, ok := w.shows(tc.conn, tc.kind, tc.obj)
			if ok != tc.want || (ok && got != mesh) {
				t.Errorf("echo = %v, %v; want %v", got, ok, tc.want)
			}
			if _, again := w.shows(tc.conn, tc.kind, tc.obj); again {
				t.Error("the same echo recognised twice")
			}
		})
	}
}
