//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Limits of the TestTenantSafety server on what it caches of one member
// cluster: small enough for fake members to go over them cheaply, large
// enough for the real clusters of the environment.
const (
	tsMaxNodes    = 5000
	tsMaxPeers    = 2000
	tsMaxCacheMiB = 64
	// tsNamespaceCacheMiB is above tsMaxCacheMiB, so that a member over the
	// latter is refused for it, not for its namespace's share; the total
	// is left at its default from --memory-limit.
	tsNamespaceCacheMiB = 96
)

// tsServer runs the TestTenantSafety server with those limits, with the
// --memory-limit artifacts/deploy gives it, and with a private /etc/hosts,
// so that a test can make a name resolve where it wants for the server
// alone.
func tsServer(t *testing.T) func(*framework.MeshServerOptions) {
	memoryLimit, err := framework.DeployedMemoryLimit()
	if err != nil {
		t.Fatal(err)
	}
	return func(o *framework.MeshServerOptions) {
		o.PrivateHosts = true
		o.ExtraArgs = append(o.ExtraArgs,
			fmt.Sprintf("--memory-limit=%d", memoryLimit),
			fmt.Sprintf("--max-member-nodes=%d", tsMaxNodes),
			fmt.Sprintf("--max-member-peers=%d", tsMaxPeers),
			fmt.Sprintf("--max-member-cache-mib=%d", tsMaxCacheMiB),
			fmt.Sprintf("--max-namespace-member-cache-mib=%d", tsNamespaceCacheMiB))
	}
}

// testNodeCount: a member with more Nodes than --max-member-nodes is not
// used, says why, and another tenant's mesh goes on.
func (ts *tsEnv) testNodeCount(first *meshv1alpha1.ClusterMesh) func(t *testing.T) {
	return func(t *testing.T) {
		fm := ts.servingMember(t, framework.FakeContent{Nodes: tsMaxNodes + 1})
		ns := ts.meshOf(t, "many", "10.161", "10.162", entryYAML("far", "fake", "10.203.0.0/16", "10.164.0.0/16"),
			map[string]*framework.FakeMember{"fake": fm})
		framework.EventuallyT(t, rcConverge, "TooManyNodes reported", func() error {
			return clusterError(ts.get(t, ns, "many"), "far", "TooManyNodes")
		})
		if err := wantCondition(ts.get(t, ns, "many"), meshv1alpha1.ConditionClustersReachable, metav1.ConditionFalse, ""); err != nil {
			t.Error(err)
		}
		ts.othersUnaffected(t, first)
		ts.delete(t, ns, "many")
	}
}

// testHugeAnswer: a member whose lists answer 100 MiB is read no further
// than 64 MiB, the server goes on, and the error says so in a few words.
func (ts *tsEnv) testHugeAnswer(first *meshv1alpha1.ClusterMesh) func(t *testing.T) {
	return func(t *testing.T) {
		before := ts.restartForMemory(t, first)
		samples := ts.sampleMemory(t)
		fm, ns := ts.fakeMemberMesh(t, framework.FakeMemberHugeAnswer, "huge-answer", "10.171", "10.173")
		framework.EventuallyT(t, rcConverge, "AnswerTooLarge reported", func() error {
			return clusterError(ts.get(t, ns, "huge-answer"), "far", "AnswerTooLarge")
		})
		if got := fm.LargestAnswer(); got == 0 || got >= framework.HugeAnswerBytes {
			t.Errorf("the server read %d bytes of a %d MiB answer", got, framework.HugeAnswerBytes>>20)
		}
		for _, cs := range ts.get(t, ns, "huge-answer").Status.Clusters {
			if len(cs.LastError) > 400 || strings.Contains(cs.LastError, "xxxxxxxx") {
				t.Errorf("lastError of %s: %d bytes: %.200s", cs.Name, len(cs.LastError), cs.LastError)
			}
		}
		anon := samples()
		after := ts.memory(t)
		t.Logf("server memory: %s before; up to %d MiB anonymous; %s after reading %d MiB of answers", before, anon>>20, after, fm.LargestAnswer()>>20)
		ts.underDeployedLimit(t, anon)
		ts.othersUnaffected(t, first)
		ts.delete(t, ns, "huge-answer")
	}
}

// testMemory: members serving Nodes far heavier than any real one, Nodes
// just under that but many, and an endless flood of Peers: the server's
// memory stays bounded, and the mesh says why it uses none of it.
func (ts *tsEnv) testMemory(first *meshv1alpha1.ClusterMesh) func(t *testing.T) {
	return func(t *testing.T) {
		const nodes = 4000
		// 120 KiB of label a Node: 470 MiB of Nodes, in pages just under
		// the 64 MiB an answer may have.
		fat := ts.servingMember(t, framework.FakeContent{Nodes: nodes, NodeLabelBytes: 120 << 10})
		// 20 KiB a Node: under what is kept of one, 80 MiB in all.
		heavy := ts.servingMember(t, framework.FakeContent{Nodes: nodes, NodeLabelBytes: 20 << 10})
		flood := ts.servingMember(t, framework.FakeContent{Nodes: 3, PeerFlood: true})

		before := ts.restartForMemory(t, first)
		samples := ts.sampleMemory(t)
		ns := ts.meshOf(t, "hoard", "10.165", "10.166",
			entryYAML("fat", "fat", "10.200.0.0/16", "10.167.0.0/16")+
				entryYAML("heavy", "heavy", "10.201.0.0/16", "10.168.0.0/16")+
				entryYAML("flood", "flood", "10.202.0.0/16", "10.169.0.0/16"),
			map[string]*framework.FakeMember{"fat": fat, "heavy": heavy, "flood": flood})
		framework.EventuallyT(t, 2*rcConverge, "every limit reported", func() error {
			m := ts.get(t, ns, "hoard")
			return errors.Join(
				clusterError(m, "heavy", "CacheBudgetExceeded"),
				clusterError(m, "flood", "TooManyPeers"),
			)
		})
		var plan meshv1alpha1.ClusterMeshPlan
		framework.EventuallyT(t, rcConverge, "the fat Nodes in the plan, left out", func() error {
			if err := json.Unmarshal([]byte(ts.plan(t, ns, "hoard")), &plan); err != nil {
				return err
			}
			for _, c := range plan.Clusters {
				if c.Name != "fat" {
					continue
				}
				for _, r := range c.Summary.SkippedByReason {
					if r.Reason == planner.ReasonNodeTooLarge && r.Count == nodes {
						return nil
					}
				}
				return fmt.Errorf("cluster fat: %+v", c.Summary)
			}
			return errors.New("no plan of cluster fat")
		})
		if !strings.Contains(toJSON(t, plan.Warnings), planner.WarningNodesTooLarge) {
			t.Errorf("no %s warning: %s", planner.WarningNodesTooLarge, toJSON(t, plan.Warnings))
		}
		anon := samples()
		after := ts.memory(t)
		t.Logf("server memory: %s before; under attack up to %d MiB anonymous; %s after. "+
			"Served: %d MiB of Nodes by fat, %d MiB by heavy; %d Peers by flood",
			before, anon>>20, after, fat.LargestAnswer()*int64(nodes/500)>>20, heavy.LargestAnswer()*int64(nodes/500)>>20, flood.Peers())
		ts.underDeployedLimit(t, anon)
		if flood.Peers() >= framework.MaxFloodPeers {
			t.Errorf("the server read the whole flood of %d Peers", flood.Peers())
		}
		ts.othersUnaffected(t, first)
		ts.delete(t, ns, "hoard")
	}
}

// servingMember starts a fake member serving content on loopback.
func (ts *tsEnv) servingMember(t *testing.T, content framework.FakeContent) *framework.FakeMember {
	t.Helper()
	fm, err := framework.StartServingFakeMember(content, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fm.Close)
	return fm
}

// meshOf creates, in a namespace of its own, mesh name between the local
// cluster (<pod>.0.0/16 and <wg>.0.0/16) and entries, with a Secret
// holding the kubeconfig of each fake member, by Secret name.
func (ts *tsEnv) meshOf(t *testing.T, name, pod, wg, entries string, secrets map[string]*framework.FakeMember) string {
	t.Helper()
	ns := ts.namespace(t, name)
	for secret, fm := range secrets {
		kc, err := fm.Kubeconfig()
		if err != nil {
			t.Fatal(err)
		}
		ts.putSecret(t, ns, secret, kc)
	}
	ts.create(t, ns, ts.meshYAML(name, pod, wg, entries))
	return ns
}

// othersUnaffected: the first tenant's mesh is Ready with its Peers as
// its view shows, and the server is ready.
func (ts *tsEnv) othersUnaffected(t *testing.T, first *meshv1alpha1.ClusterMesh) {
	t.Helper()
	framework.EventuallyT(t, rcConverge, "the other tenant's mesh Ready and applied", func() error {
		if err := wantCondition(ts.mesh(t, "first"), meshv1alpha1.ConditionReady, metav1.ConditionTrue, reconciler.ReasonReady); err != nil {
			return err
		}
		return ts.allMatchView(t, first)
	})
	direct, err := kubernetes.NewForConfig(ts.server.DirectRESTConfig(framework.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := direct.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background()); err != nil {
		t.Errorf("the server's /readyz: %v %s", err, raw)
	}
}

// restartForMemory restarts the server, so that its peak memory is that of
// what comes next, and returns its memory once the other tenant's mesh is
// read and applied again.
func (ts *tsEnv) restartForMemory(t *testing.T, first *meshv1alpha1.ClusterMesh) framework.ProcessMemory {
	t.Helper()
	if err := ts.server.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ts.server.Start(ctx); err != nil {
		t.Fatalf("restart: %v\n%s", err, ts.server.LogTail(40))
	}
	ts.othersUnaffected(t, first)
	return ts.memory(t)
}

// underDeployedLimit: the server's anonymous memory (what a container's
// limit cannot reclaim; the binary's pages it can) stayed under the memory
// limit of its container in artifacts/deploy, above which the pod would be
// killed. Its --memory-limit (tsServer) has Go collect harder near the
// limit; what is kept is bounded by the --max-member-* limits.
func (ts *tsEnv) underDeployedLimit(t *testing.T, anon int64) {
	t.Helper()
	limit, err := framework.DeployedMemoryLimit()
	if err != nil {
		t.Fatal(err)
	}
	if anon >= limit {
		t.Errorf("the server's anonymous memory reached %d MiB, over its container's limit of %d MiB", anon>>20, limit>>20)
	}
}

func (ts *tsEnv) memory(t *testing.T) framework.ProcessMemory {
	t.Helper()
	m, err := ts.server.Memory()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sampleMemory reads the server's anonymous memory every 100 ms until the
// returned function is called, which returns the most it saw.
func (ts *tsEnv) sampleMemory(t *testing.T) func() int64 {
	var (
		mu   sync.Mutex
		most int64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := ts.server.Memory(); err == nil {
				mu.Lock()
				most = max(most, m.Anon)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	finish := func() int64 {
		once.Do(func() { close(stop); <-done })
		mu.Lock()
		defer mu.Unlock()
		return most
	}
	t.Cleanup(func() { finish() })
	return finish
}
