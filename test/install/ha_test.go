//go:build e2e

package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// haBed is the HA install's topology on real processes: a 3-member etcd
// cluster with TLS between members and to clients, run with the flags of
// the HA overlay's etcd StatefulSet, and two replicas of the image's server
// on it (the overlay's Deployment: its flags, the self-managed certificate
// they share, one Lease) behind one address that fails over, a TCPProxy
// standing in for the Service.
type haBed struct {
	etcd     *framework.EtcdCluster
	proxy    *framework.TCPProxy
	replicas [2]*framework.MeshServer
	lease    string
}

// haServerFlags are the only flags the HA Deployment gives the server; the
// framework sets each of them for its own processes and files, but
// --memory-limit, which the replicas get from the Deployment's limit (the
// kubelet expands $(MEMORY_LIMIT) alike), and the quota, passed as it is. A flag added to the manifest
// fails the test until it is run here too.
var haServerFlags = []string{"--secure-port", "--etcd-servers", "--etcd-cafile", "--etcd-certfile", "--etcd-keyfile", "--memory-limit", "--etcd-quota-backend-bytes"}

func startHABed(t *testing.T, ctx context.Context) *haBed {
	t.Helper()
	ha := index(decode(t, render(t, ctx, rendering{name: "kustomize ha", kustomize: "overlays/ha"})))
	etcdSet := ha.get("StatefulSet", framework.MeshNamespace, "kilo-mesh-etcd")
	server := ha.get("Deployment", framework.MeshNamespace, "kilo-mesh-apiserver")
	if etcdSet == nil || server == nil {
		t.Fatal("the HA overlay renders no etcd StatefulSet or no server Deployment")
	}
	var extra []string
	for _, a := range containerArgs(t, etcdSet) {
		flag, _, _ := strings.Cut(a, "=")
		if !slices.Contains(framework.EtcdClusterFlags, flag) {
			extra = append(extra, a)
		}
	}
	var quota string
	for _, a := range containerArgs(t, server) {
		flag, _, _ := strings.Cut(a, "=")
		if !slices.Contains(haServerFlags, flag) {
			t.Fatalf("the HA Deployment passes %s, which this test does not", a)
		}
		if flag == "--etcd-quota-backend-bytes" {
			quota = a
		}
	}
	memoryLimit := containerMemoryLimit(t, server)
	b := &haBed{lease: framework.UniqueName("lease")}
	var err error
	b.etcd, err = env.StartEtcdCluster(ctx, framework.EtcdClusterOptions{
		ExtraArgs: extra,
		PeerCN:    str(ha.get("Certificate", framework.MeshNamespace, "kilo-mesh-etcd-peer"), "spec", "commonName"),
		ClientCN:  str(ha.get("Certificate", framework.MeshNamespace, "kilo-mesh-etcd-client"), "spec", "commonName"),
	})
	if b.etcd != nil {
		t.Cleanup(func() {
			if err := b.etcd.Stop(); err != nil {
				t.Errorf("stopping etcd: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatalf("starting the etcd cluster with the overlay's flags %v: %v", extra, err)
	}
	t.Logf("etcd cluster of %d members with the overlay's flags %v", b.etcd.Members(), extra)
	ports, err := framework.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	b.proxy, err = framework.StartTCPProxy(ports[2], fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.proxy.Close() })
	prefix := "/" + framework.UniqueName("ha")
	for i := range b.replicas {
		m, err := env.StartMeshServer(ctx, framework.MeshServerOptions{
			Binary:      imageBinary,
			Port:        ports[i],
			ServicePort: b.proxy.Port,
			// Only the first registers; both serve behind the proxy.
			SkipRegistration: i > 0,
			SelfManagedCert:  true,
			Etcd:             b.etcd,
			EtcdPrefix:       prefix,
			ExtraArgs:        []string{"--leader-elect-resource-name=" + b.lease, "-v=2", "--memory-limit=" + memoryLimit, quota},
		})
		if m != nil {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("log of replica %d:\n%s", i, m.LogTail(60))
				}
				if err := m.Stop(); err != nil {
					t.Errorf("stopping replica %d: %v", i, err)
				}
			})
		}
		if err != nil {
			t.Fatalf("starting replica %d: %v", i, err)
		}
		b.replicas[i] = m
	}
	return b
}

func containerArgs(t *testing.T, workload *unstructured.Unstructured) []string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(workload.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("%s %s has %d containers, want 1", workload.GetKind(), workload.GetName(), len(cs))
	}
	var out []string
	for _, a := range cs[0].(map[string]any)["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

// containerMemoryLimit is the memory limit of the workload's container.
func containerMemoryLimit(t *testing.T, workload *unstructured.Unstructured) string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(workload.Object, "spec", "template", "spec", "containers")
	limit, _, _ := unstructured.NestedString(cs[0].(map[string]any), "resources", "limits", "memory")
	if limit == "" {
		t.Fatalf("%s %s has no memory limit", workload.GetKind(), workload.GetName())
	}
	return limit
}

// holder is the identity holding the replicas' Lease, "" if none.
func (b *haBed) holder(ctx context.Context) string {
	l, err := env.Client(framework.HostCluster, admin).CoordinationV1().Leases(framework.MeshNamespace).Get(ctx, b.lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leader is the index of the replica whose current run holds the Lease
// (its identity, new at every start, is in its log), or -1.
func (b *haBed) leader(ctx context.Context) int {
	h := b.holder(ctx)
	if h == "" {
		return -1
	}
	for i, m := range b.replicas {
		if !m.Running() {
			continue
		}
		for _, line := range strings.Split(m.Logs(), "\n") {
			if strings.Contains(line, `"Started leading"`) && strings.Contains(line, `identity="`+h+`"`) {
				return i
			}
		}
	}
	return -1
}

// TestHA: the etcd cluster keeps every write across a member's stop and
// restart; the replicas fail over on SIGTERM and on SIGKILL of the leader,
// the other reconciling a node change, and no Peer is written twice for it.
func TestHA(t *testing.T) {
	ctx := testContext(t, 10*time.Minute)
	bed := startHABed(t, ctx)
	t.Run("etcd: a member stopped and restarted loses nothing", func(t *testing.T) { testHAStorage(t, ctx, bed) })
	t.Run("replicas: the standby takes over and writes each Peer once", func(t *testing.T) { testHAFailover(t, ctx, bed) })
}
