package planner

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func randSource() *rand.Rand { return rand.New(rand.NewSource(7)) }

// benchInput is a mesh of clusters x nodes realistic nodes, all Ready, with
// kg's annotations for the given granularity ("location" or "full"): ten
// locations per cluster, a leader hint per location, dual addresses, and
// disjoint declared networks.
func benchInput(clusters, nodes int, granularity string) Input {
	in := Input{MeshNamespace: "bench", MeshName: "mesh", MeshUID: "00000000-0000-0000-0000-00000000b0b0", Now: fixtureNow, Clusters: map[string]ClusterSnapshot{}}
	lastSeen := strconv.FormatInt(fixtureNow.Unix()-5, 10)
	for c := 0; c < clusters; c++ {
		name := fmt.Sprintf("cluster-%02d", c)
		in.Spec.Clusters = append(in.Spec.Clusters, meshv1alpha1.ClusterEntry{
			Name:          name,
			PodCIDRs:      []string{fmt.Sprintf("10.%d.0.0/12", c*16)},
			WireguardCIDR: fmt.Sprintf("100.%d.0.0/16", 64+c),
			ServiceCIDR:   fmt.Sprintf("192.168.%d.0/24", c),
			NodeCIDRs:     []string{fmt.Sprintf("172.%d.0.0/16", 16+c)},
		})
		list := make([]*corev1.Node, nodes)
		for k := 0; k < nodes; k++ {
			var key [32]byte
			binary.BigEndian.PutUint64(key[:], uint64(c)<<32|uint64(k)|1<<63)
			a := map[string]string{
				kilov1alpha1.AnnotationKey:         base64.StdEncoding.EncodeToString(key[:]),
				kilov1alpha1.AnnotationEndpoint:    fmt.Sprintf("172.%d.%d.%d:51820", 16+c, k/256, k%256),
				kilov1alpha1.AnnotationInternalIP:  fmt.Sprintf("172.%d.%d.%d/16", 16+c, k/256, k%256),
				kilov1alpha1.AnnotationLastSeen:    lastSeen,
				kilov1alpha1.AnnotationGranularity: granularity,
			}
			if k < 10 {
				a[kilov1alpha1.AnnotationLeader] = "true"
			}
			list[k] = &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{
					Name:        fmt.Sprintf("%s-node-%05d", name, k),
					Labels:      map[string]string{meshv1alpha1.DefaultTopologyLabel: fmt.Sprintf("zone-%d", k%10)},
					Annotations: a,
				},
				Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.%d/26", c*16+k/1024, (k/4)%256, (k%4)*64)},
				Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
					{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("172.%d.%d.%d", 16+c, k/256, k%256)},
					{Type: corev1.NodeExternalIP, Address: fmt.Sprintf("44.%d.%d.%d", c, k/256, k%256)},
				}},
			}
		}
		in.Clusters[name] = ClusterSnapshot{Reachable: true, Nodes: nodesOf(list...)}
	}
	return in
}

// cpuTime is the CPU time the process has used, on all threads: unlike the
// wall clock, it hardly moves when other work shares the machine. The
// garbage collector's background work on other cores counts too.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs Compute b.N times and reports CPU time per plan beside the
// wall time.
func loop(b *testing.B, in Input) {
	b.ReportAllocs()
	start := cpuTime(b)
	n := 0
	for b.Loop() {
		if _, err := Compute(in); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(n), "cpu-ns/op")
}

// BenchmarkPlan plans 10 clusters of 100, 1,000 and 5,000 nodes, holding no
// Peers yet (the largest plan: everything is created).
func BenchmarkPlan(b *testing.B) {
	for _, g := range []string{"location", "full"} {
		for _, n := range []int{100, 1000, 5000} {
			in := benchInput(10, n, g)
			b.Run(fmt.Sprintf("%s/10x%d", g, n), func(b *testing.B) { loop(b, in) })
		}
	}
}

// BenchmarkPlanSteady plans a mesh whose clusters already hold every
// desired Peer: the reconciler's usual case, with a full diff.
func BenchmarkPlanSteady(b *testing.B) {
	for _, g := range []string{"location", "full"} {
		in := benchInput(10, 1000, g)
		p, err := Compute(in)
		if err != nil {
			b.Fatal(err)
		}
		in = withPeers(in, p)
		b.Run(fmt.Sprintf("%s/10x1000", g), func(b *testing.B) { loop(b, in) })
	}
}

// The benchmark's mesh must be a sane one: everything advertised.
func TestBenchInputIsClean(t *testing.T) {
	for _, g := range []string{"location", "full"} {
		in := benchInput(3, 300, g)
		p := mustCompute(t, in)
		checkPlanInvariants(t, in, p)
		if len(p.View.Conflicts) > 0 {
			t.Errorf("%s: conflicts %+v", g, p.View.Conflicts)
		}
		for _, c := range p.View.Clusters {
			if c.Summary.AdvertisedNodes != 300 {
				t.Errorf("%s: %s advertises %d of 300 nodes", g, c.Name, c.Summary.AdvertisedNodes)
			}
		}
		want := 10
		if g == "full" {
			want = 300
		}
		if n := p.DesiredPeers["cluster-00"].Len(); n != 2*want {
			t.Errorf("%s: %d Peers on cluster-00, want %d", g, n, 2*want)
		}
	}
}

// BenchmarkPlanRelay plans 10 clusters of 1,000 nodes of which nine are
// behind NAT: cluster-00 relays 36 pairs, and the Peer of its relaying
// group on each spoke carries the other eight spokes' addresses.
func BenchmarkPlanRelay(b *testing.B) {
	for _, g := range []string{"location", "full"} {
		in := benchInput(10, 1000, g)
		for i := 1; i < len(in.Spec.Clusters); i++ {
			in.Spec.Clusters[i].BehindNAT = true
		}
		b.Run(fmt.Sprintf("%s/10x1000", g), func(b *testing.B) { loop(b, in) })
	}
}
