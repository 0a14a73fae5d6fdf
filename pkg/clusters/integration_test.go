//go:build integration

package clusters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Users added to every cluster of the environment besides the framework's:
// a second set of full credentials (same rights as admin, other token), and
// tenant-a (framework default) has no rights at all on member clusters.
const userReader = "mesh-reader"

const (
	member1 = 1
	member2 = 2
)

func TestMemberClusters(t *testing.T) {
	env := framework.StartT(t, framework.Options{
		Clusters: 3,
		Users:    []framework.User{{Name: userReader, Groups: []string{"system:masters"}}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := &harness{t: t, env: env, ctx: ctx}

	t.Run("nodes, peers and changes", h.testNodesPeersAndChanges)
	t.Run("shared caches and reference counting", h.testSharedCaches)
	t.Run("secret rotation", h.testSecretRotation)
	t.Run("refused kubeconfigs and missing secrets", h.testRefusals)
	t.Run("secret gone before the mesh's deletion", h.testSecretGoneBeforeDeletion)
	t.Run("a departed entry held until released", h.testDepartedHeld)
	t.Run("a deleted mesh's connections held, a repointed one's too", h.testDeletedHeld)
	t.Run("cluster without the peer CRD", h.testNoPeerCRD)
	t.Run("stopped member cluster", h.testStoppedCluster)
	t.Run("frozen member cluster", h.testFrozenCluster)
	t.Run("a busy member answering its probe late", h.testSlowProbe)
	t.Run("server policy", h.testServerPolicy)
	t.Run("verified identity", h.testIdentity)
	t.Run("node limit", h.testNodeLimit)
	t.Run("peer limit", h.testPeerLimit)
}

type harness struct {
	t   *testing.T
	env *framework.Env
	ctx context.Context
}

// startManager runs a Manager against the environment until the test ends,
// then checks that Run stopped every informer.
func (h *harness) startManager(t *testing.T, mutate ...func(*Config)) (*Manager, *changeLog) {
	t.Helper()
	cfg := Config{
		Local:        h.env.RESTConfig(framework.HostCluster, framework.UserAdmin),
		ServerPolicy: memberaccess.StaticServerPolicy(prefixes(framework.LoopbackServers...)),
	}
	for _, f := range mutate {
		f(&cfg)
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	changes := newChangeLog()
	m.AddChangeHandler(changes.record)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return within 30s of its context ending")
			return
		}
		if n := m.informersNotStopped(); n != 0 {
			t.Errorf("after Run returned: %d informers not stopped, want none", n)
		}
	})
	return m, changes
}

// followMember starts a Manager following mesh ns/name of the host and an
// entry "member" whose Secret reaches cluster, and waits until both are usable.
func (h *harness) followMember(t *testing.T, ns, name string, cluster int, mutate ...func(*Config)) (*Manager, *changeLog, *meshv1alpha1.ClusterMesh) {
	t.Helper()
	h.putSecret(t, ns, "member", h.kubeconfig(cluster, framework.UserAdmin))
	mesh := newMesh(ns, name, localEntry("host"), remoteEntry("member", "member"))
	m, changes := h.startManager(t, mutate...)
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "usable", allUsable(m, mesh))
	return m, changes, mesh
}

func (h *harness) namespace(t *testing.T) string {
	t.Helper()
	ns, err := h.env.NewNamespace(h.ctx, "mesh")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// putSecret creates or replaces Secret ns/name holding kubeconfig under key
// "kubeconfig".
func (h *harness) putSecret(t *testing.T, ns, name string, kubeconfig []byte) {
	t.Helper()
	secrets := h.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(ns)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	existing, err := secrets.Get(h.ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(h.ctx, s, metav1.CreateOptions{})
	case err == nil:
		existing.Data = s.Data
		_, err = secrets.Update(h.ctx, existing, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (h *harness) kubeconfig(cluster int, user string) []byte {
	return h.env.KubeconfigBytes(cluster, user)
}

// mutatedKubeconfig is the kubeconfig of user on cluster with f applied to
// its only cluster and user entries.
func (h *harness) mutatedKubeconfig(t *testing.T, cluster int, user string, f func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	kc, err := clientcmd.Load(h.kubeconfig(cluster, user))
	if err != nil {
		t.Fatal(err)
	}
	kctx := kc.Contexts[kc.CurrentContext]
	f(kc.Clusters[kctx.Cluster], kc.AuthInfos[kctx.AuthInfo])
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func (h *harness) createNode(t *testing.T, cluster int, prefix string) string {
	t.Helper()
	name := framework.UniqueName(prefix)
	if _, err := h.env.CreateKiloNode(h.ctx, cluster, framework.KiloNode{Name: name, PodCIDR: "10.244.0.0/24", InternalIP: "192.168.0.10/24", Endpoint: "203.0.113.1:51820"}); err != nil {
		t.Fatal(err)
	}
	return name
}

func newMesh(ns, name string, entries ...meshv1alpha1.ClusterEntry) *meshv1alpha1.ClusterMesh {
	return &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: meshv1alpha1.ClusterMeshSpec{Clusters: entries}}
}

func localEntry(name string) meshv1alpha1.ClusterEntry {
	return meshv1alpha1.ClusterEntry{Name: name, Local: true}
}

func remoteEntry(name, secret string) meshv1alpha1.ClusterEntry {
	return meshv1alpha1.ClusterEntry{Name: name, KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: secret, Key: "kubeconfig"}}
}

func meshKey(m *meshv1alpha1.ClusterMesh) types.NamespacedName {
	return types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
}

// usable is nil when st is reachable, synced, has the Peer CRD and no problem.
func usable(st ClusterState) error {
	if !st.Reachable || !st.Synced || !st.PeerCRD || st.Reason != "" {
		return fmt.Errorf("%s: reachable=%v synced=%v peerCRD=%v reason=%q err=%q", st.Name, st.Reachable, st.Synced, st.PeerCRD, st.Reason, st.LastError)
	}
	return nil
}

func allUsable(m *Manager, mesh *meshv1alpha1.ClusterMesh) func() error {
	return func() error {
		var bad []error
		for _, st := range m.Snapshot(mesh) {
			bad = append(bad, usable(st))
		}
		return errors.Join(bad...)
	}
}

func hasNode(st ClusterState, name string) bool {
	for _, n := range st.Nodes.All() {
		if n.Name == name {
			return true
		}
	}
	return false
}

func hasPeer(st ClusterState, name string) *kilov1alpha1.Peer {
	for _, p := range st.Peers.All() {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// changeLog records the keys the change handler receives.
type changeLog struct {
	mu   sync.Mutex
	keys []types.NamespacedName
}

func newChangeLog() *changeLog { return &changeLog{} }

func (c *changeLog) record(k types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = append(c.keys, k)
}

func (c *changeLog) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = nil
}

func (c *changeLog) seen(k types.NamespacedName) func() error {
	return func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, got := range c.keys {
			if got == k {
				return nil
			}
		}
		return fmt.Errorf("no change reported for %s (got %v)", k, c.keys)
	}
}
