package clusters

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// groupPeer is the Peer of one group as a member's watch decodes it: each
// member of a mesh holds one like it, with the same labels, annotations
// and allowed IPs, in memory of its own.
func groupPeer(group int) *kilov1alpha1.Peer {
	ips := make([]string, 0, 101)
	for n := range 100 {
		ips = append(ips, fmt.Sprintf("10.%d.%d.0/24", group, n))
	}
	ips = append(ips, fmt.Sprintf("100.64.%d.1/32", group))
	return &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("mesh-c%d-location-a", group), UID: "u", ResourceVersion: "1",
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "kilo-mesh-apiserver", "mesh.kilo.squat.ai/mesh-namespace": "tenant",
				"mesh.kilo.squat.ai/mesh-name": "mesh", "mesh.kilo.squat.ai/mesh-uid": "00000000-0000-0000-0000-000000000001",
				"mesh.kilo.squat.ai/source-cluster": fmt.Sprintf("c%d", group),
			},
			Annotations: map[string]string{"mesh.kilo.squat.ai/source-group": "location:a", "mesh.kilo.squat.ai/source-leader": "node-0"},
		},
		Spec: kilov1alpha1.PeerSpec{AllowedIPs: ips, PublicKey: "key"},
	}
}

func TestInternedPeers(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	in := newInterner(clk)
	a, wa := in.slimPeer(groupPeer(7))
	b, wb := in.slimPeer(groupPeer(7))
	other, _ := in.slimPeer(groupPeer(8))
	// What is held once weighs once: the second copy is charged its own
	// fields and references.
	if wb*4 > wa {
		t.Errorf("the second copy weighs %d, the first %d", wb, wa)
	}
	if &a.Spec.AllowedIPs[0] != &b.Spec.AllowedIPs[0] {
		t.Error("two members' copies of a group's Peer hold two lists of allowed IPs")
	}
	a.Labels["probe"] = "x"
	if b.Labels["probe"] != "x" {
		t.Error("two members' copies of a group's Peer hold two label maps")
	}
	delete(a.Labels, "probe")
	if &other.Spec.AllowedIPs[0] == &a.Spec.AllowedIPs[0] || other.Labels["mesh.kilo.squat.ai/source-cluster"] != "c8" {
		t.Error("another group's Peer shares the first one's lists")
	}
	// A value nothing looks up is forgotten after two generations.
	clk.SetTime(clk.Now().Add(3 * internFor))
	in.get("")
	clk.SetTime(clk.Now().Add(3 * internFor))
	in.get("")
	if len(in.cur)+len(in.prev) != 0 {
		t.Errorf("%d values still interned after two generations unused", len(in.cur)+len(in.prev))
	}
}

// BenchmarkCachedPeers: the memory the caches of a 250-cluster mesh keep
// of one group's Peer on each of the 249 other members, per Peer, with and
// without sharing.
func BenchmarkCachedPeers(b *testing.B) {
	const members = 249
	for _, interned := range []bool{false, true} {
		b.Run(map[bool]string{false: "copied", true: "interned"}[interned], func(b *testing.B) {
			for b.Loop() {
				var in *interner
				if interned {
					in = newInterner(clocktesting.NewFakePassiveClock(time.Unix(1000, 0)))
				}
				kept := make([]*kilov1alpha1.Peer, 0, members)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range members {
					p, _ := in.slimPeer(groupPeer(7))
					kept = append(kept, p)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/members, "retained-B/Peer")
				runtime.KeepAlive(kept)
				runtime.KeepAlive(in)
			}
		})
	}
}
