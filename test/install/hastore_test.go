//go:build e2e

package install

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// storeClusters are the member clusters of mesh i at round r: their
// kubeconfig Secrets do not exist, so nothing is dialled and the mesh is
// only data; the networks tell the round.
func storeClusters(i, r int) []any {
	entry := func(name string, base int) map[string]any {
		return map[string]any{
			"name":                name,
			"kubeconfigSecretRef": map[string]any{"name": "missing-" + name},
			"podCIDRs":            []any{fmt.Sprintf("10.%d.%d.0/24", base+i, r)},
			"wireguardCIDR":       fmt.Sprintf("172.%d.%d.0/24", base/50+13, i),
		}
	}
	return []any{entry("a", 100), entry("b", 150)}
}

// storeWriter writes the storage test's meshes through the aggregation
// layer (and so through the proxy to either replica), retrying what fails
// while etcd elects a leader; every write it reports done was answered
// with success.
type storeWriter struct {
	t       *testing.T
	ctx     context.Context
	meshes  dynamic.ResourceInterface
	rounds  map[string]int // what every mesh must hold
	retries int
	took    []time.Duration // of every write, retries included
}

func (w *storeWriter) name(i int) string { return fmt.Sprintf("store-%d", i) }

func (w *storeWriter) write(i, r int) {
	w.t.Helper()
	defer func(start time.Time) { w.took = append(w.took, time.Since(start)) }(time.Now())
	name := w.name(i)
	err := framework.Eventually(w.ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) error {
		var err error
		if _, ok := w.rounds[name]; !ok {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": framework.MeshGroup + "/" + framework.MeshVersion,
				"kind":       "ClusterMesh",
				"metadata":   map[string]any{"name": name},
				"spec":       map[string]any{"clusters": storeClusters(i, r)},
			}}
			_, err = w.meshes.Create(ctx, obj, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// An earlier try was stored, its answer lost: the update
				// below settles the round.
				w.rounds[name] = -1
			}
		}
		if _, ok := w.rounds[name]; ok {
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"clusters": storeClusters(i, r)}})
			_, err = w.meshes.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if err != nil {
			w.retries++
		}
		return err
	})
	if err != nil {
		w.t.Fatalf("writing %s round %d: %v", name, r, err)
	}
	w.rounds[name] = r
}

// check reads every mesh through the API: each holds its last round.
func (w *storeWriter) check(when string) {
	w.t.Helper()
	list, err := w.meshes.List(w.ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatalf("%s: listing meshes: %v", when, err)
	}
	got := map[string]string{}
	for _, m := range list.Items {
		cs, _, _ := unstructured.NestedSlice(m.Object, "spec", "clusters")
		cidrs, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "podCIDRs")
		got[m.GetName()] = cidrs[0]
	}
	for name, r := range w.rounds {
		var i int
		fmt.Sscanf(name, "store-%d", &i)
		want := storeClusters(i, r)[0].(map[string]any)["podCIDRs"].([]any)[0]
		if got[name] != want {
			w.t.Errorf("%s: %s holds %q, want %q (round %d)", when, name, got[name], want, r)
		}
	}
	if len(got) != len(w.rounds) {
		w.t.Errorf("%s: %d meshes stored, %d written", when, len(got), len(w.rounds))
	}
}

// testHAStorage: with the etcd leader stopped, writes go on; the member,
// restarted, catches up (its own copy, read without the leader, holds
// every key); then it is needed for the quorum while another member is
// down, and nothing written is missing.
func testHAStorage(t *testing.T, ctx context.Context, bed *haBed) {
	ns, err := env.NewNamespace(ctx, "ha-store")
	if err != nil {
		t.Fatal(err)
	}
	w := &storeWriter{t: t, ctx: ctx, rounds: map[string]int{},
		meshes: env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR).Namespace(ns)}
	etcd := bed.etcd
	prefix := bed.replicas[0].EtcdPrefix + "/"
	meshKeys := func(member int, serializable bool) ([]string, int64, error) {
		keys, rev, err := etcd.Keys(ctx, member, prefix, serializable)
		keys = slices.DeleteFunc(keys, func(k string) bool { return !strings.Contains(k, "/clustermeshes/"+ns+"/") })
		return keys, rev, err
	}

	for i := range 5 {
		w.write(i, 0)
	}
	for i := range 5 {
		w.write(i, 1)
	}
	t.Logf("10 writes with every member up: %v", w.took)
	w.check("all members up")

	down, err := etcd.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stopping := time.Now()
	if err := etcd.StopMember(down); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd leader (member %d) stopped in %s", down, time.Since(stopping).Round(time.Millisecond))
	start, done := time.Now(), len(w.took)
	for i := 5; i < 10; i++ {
		w.write(i, 0)
	}
	for i := range 10 {
		w.write(i, 2)
	}
	t.Logf("%d writes with it stopped in %s, %d tries failed: %v", len(w.took)-done, time.Since(start).Round(time.Millisecond), w.retries, w.took[done:])
	w.check("leader member stopped")
	up := (down + 1) % etcd.Members()
	want, rev, err := meshKeys(up, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 10 {
		t.Fatalf("%d keys of the namespace's meshes in etcd, want 10: %v", len(want), want)
	}

	restarted := time.Now()
	if err := etcd.StartMember(ctx, down); err != nil {
		t.Fatalf("restarting member %d: %v", down, err)
	}
	ready := time.Since(restarted)
	caughtUp := framework.EventuallyT(t, time.Minute, "the restarted member's own copy", func() error {
		keys, r, err := meshKeys(down, true)
		if err != nil {
			return err
		}
		if r < rev || !slices.Equal(keys, want) {
			return fmt.Errorf("revision %d (want %d), keys %v", r, rev, keys)
		}
		return nil
	})
	t.Logf("member %d restarted: ready after %s, its own copy complete %s later", down, ready.Round(time.Millisecond), caughtUp.Round(time.Millisecond))

	// Another member down: the quorum needs the restarted one now.
	other := (down + 2) % etcd.Members()
	if err := etcd.StopMember(other); err != nil {
		t.Fatal(err)
	}
	w.check(fmt.Sprintf("member %d stopped after member %d's restart", other, down))
	for i := range 10 {
		w.write(i, 3)
	}
	w.check("after writes with the restarted member in the quorum")
	if err := etcd.StartMember(ctx, other); err != nil {
		t.Fatalf("restarting member %d: %v", other, err)
	}
	final, rev, err := meshKeys(up, false)
	if err != nil {
		t.Fatal(err)
	}
	for m := range etcd.Members() {
		framework.EventuallyT(t, time.Minute, fmt.Sprintf("member %d's own copy", m), func() error {
			keys, r, err := meshKeys(m, true)
			if err != nil {
				return err
			}
			if r < rev || !slices.Equal(keys, final) {
				return fmt.Errorf("revision %d (want %d), keys %v", r, rev, keys)
			}
			return nil
		})
	}
	w.check("every member back")
}
