package planner

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"maps"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// BenchmarkIncremental plans a mesh at rest (every Peer held) after one
// node's key changed, node after node, three ways: Next given the change,
// Diff and Next as the plan cache calls them (Diff skips what the list
// versions share), and Compute, the whole plan. The node is a
// location's leader under location granularity, so that its Peer changes.
func BenchmarkIncremental(b *testing.B) {
	for _, g := range []string{"location", "full"} {
		for _, n := range []int{100, 1000, 5000} {
			in := benchInput(10, n, g)
			p, err := Compute(in)
			if err != nil {
				b.Fatal(err)
			}
			in = withPeers(in, p)
			for _, mode := range []string{"next", "diff+next", "whole"} {
				b.Run(fmt.Sprintf("%s/10x%d/%s", g, n, mode), func(b *testing.B) { changeLoop(b, in, mode, otherKey) })
			}
		}
	}
}

// BenchmarkIncrementalEndpoint is BenchmarkIncremental's next at full
// granularity with a node's force-endpoint changing instead of its key: the
// group's entry in its cluster's view changes too.
func BenchmarkIncrementalEndpoint(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		in := benchInput(10, n, "full")
		p, err := Compute(in)
		if err != nil {
			b.Fatal(err)
		}
		in = withPeers(in, p)
		b.Run(fmt.Sprintf("full/10x%d/next", n), func(b *testing.B) { changeLoop(b, in, "next", otherEndpoint) })
	}
}

func otherKey(n *corev1.Node, j int) {
	var key [32]byte
	binary.BigEndian.PutUint64(key[:], uint64(j)|1<<62)
	n.Annotations[kilov1alpha1.AnnotationKey] = base64.StdEncoding.EncodeToString(key[:])
}

func otherEndpoint(n *corev1.Node, j int) {
	n.Annotations[kilov1alpha1.AnnotationForceEndpoint] = fmt.Sprintf("45.0.0.%d:51820", j)
}

// changeLoop changes one of ten nodes of one cluster per plan (edit
// changes it), each back and forth between itself and its edited copy, in
// a new version of the cluster's list as its member cache would make.
func changeLoop(b *testing.B, in Input, mode string, edit func(n *corev1.Node, j int)) {
	const cluster = "cluster-01"
	snap := in.Clusters[cluster]
	in.Clusters = maps.Clone(in.Clusters)
	var versions [10][2]*corev1.Node
	for j, n := range snap.Nodes.All() {
		if j == len(versions) {
			break
		}
		other := n.DeepCopy()
		edit(other, j)
		versions[j] = [2]*corev1.Node{n, other}
	}
	_, st, err := Start(in)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC() // the fixtures' garbage is not the plans'
	b.ReportAllocs()
	start := cpuTime(b)
	i := 0
	for b.Loop() {
		j := i % len(versions)
		old, cur := versions[j][(i/len(versions))%2], versions[j][(i/len(versions)+1)%2]
		i++
		var whole bool
		switch mode {
		case "next":
			snap.Nodes = snap.Nodes.With(cur, nodeName)
			in.Clusters[cluster] = snap // st's input shares the map: only the change says what moved
			_, st, whole, err = st.Next(in, Changes{Nodes: []NodeChange{{Cluster: cluster, Old: old, New: cur}}})
		case "diff+next":
			next := in
			next.Clusters = maps.Clone(in.Clusters)
			snap.Nodes = snap.Nodes.With(cur, nodeName)
			next.Clusters[cluster] = snap
			in = next
			_, st, whole, err = st.Next(in, st.Diff(&in))
		default:
			snap.Nodes = snap.Nodes.With(cur, nodeName)
			in.Clusters[cluster] = snap
			_, err = Compute(in)
		}
		if err != nil || whole {
			b.Fatalf("plan %d: planned whole %v, error %v", i, whole, err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(i), "cpu-ns/op")
}
