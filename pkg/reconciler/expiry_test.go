package reconciler

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
)

func nodeSeen(name, lastSeen string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kilov1alpha1.AnnotationLastSeen: lastSeen}}}
}

func TestNextExpiry(t *testing.T) {
	now := time.Unix(1_000_000, 500_000_000)
	ago := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).Unix(), 10) }
	states := map[string]clusters.ClusterState{
		"eu": {Reachable: true, Synced: true, Nodes: []*corev1.Node{
			nodeSeen("fresh", ago(0)),
			nodeSeen("older", ago(40*time.Second)),
			nodeSeen("expired", ago(2*time.Minute)),
			nodeSeen("garbage", "yesterday"),
		}},
		// Caches of clusters that cannot be acted on decide nothing.
		"down":     {Reachable: false, Synced: true, Nodes: []*corev1.Node{nodeSeen("x", ago(59*time.Second))}},
		"unsynced": {Reachable: true, Synced: false, Nodes: []*corev1.Node{nodeSeen("y", ago(59*time.Second))}},
	}
	// "older" was seen at second 999960 (now-40s rounded down), so it
	// expires at 1000020: 19.5 s from now, plus the margin.
	want := 19500*time.Millisecond + expiryMargin
	if got := nextExpiry(states, now); got != want {
		t.Errorf("nextExpiry = %v, want %v", got, want)
	}
	if got := nextExpiry(map[string]clusters.ClusterState{"eu": {Reachable: true, Synced: true,
		Nodes: []*corev1.Node{nodeSeen("expired", ago(time.Hour))}}}, now); got != 0 {
		t.Errorf("nextExpiry with only expired nodes = %v, want 0", got)
	}
}
