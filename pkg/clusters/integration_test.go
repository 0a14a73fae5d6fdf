//go:build integration

package clusters

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
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
	t.Run("cluster without the peer CRD", h.testNoPeerCRD)
	t.Run("stopped member cluster", h.testStoppedCluster)
	t.Run("frozen member cluster", h.testFrozenCluster)
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
		ServerPolicy: StaticServerPolicy(mustPrefixes(framework.LoopbackServers...)),
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
	for _, n := range st.Nodes {
		if n.Name == name {
			return true
		}
	}
	return false
}

func hasPeer(st ClusterState, name string) *kilov1alpha1.Peer {
	for _, p := range st.Peers {
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

func (h *harness) testNodesPeersAndChanges(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	h.putSecret(t, ns, "member-2", h.kubeconfig(member2, framework.UserAdmin))
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("one", "member-1"), remoteEntry("two", "member-2"))
	m, changes := h.startManager(t)
	m.Ensure(mesh)
	took := framework.EventuallyT(t, 30*time.Second, "all clusters usable", allUsable(m, mesh))
	t.Logf("three clusters synced %s after Ensure", took.Round(time.Millisecond))
	framework.EventuallyT(t, 5*time.Second, "change reported after sync", changes.seen(meshKey(mesh)))
	if !m.Settled(mesh) {
		t.Error("Settled is false with every cluster synced")
	}

	// A Node created on member 1 appears there, and only there.
	node := h.createNode(t, member1, "n1")
	took = framework.EventuallyT(t, 10*time.Second, "node in the cache", func() error {
		if !hasNode(m.Snapshot(mesh)["one"], node) {
			return errors.New("not yet")
		}
		return nil
	})
	t.Logf("node visible %s after creation", took.Round(time.Millisecond))
	snap := m.Snapshot(mesh)
	if hasNode(snap["two"], node) || hasNode(snap["host"], node) {
		t.Error("node of member 1 shows up in another cluster")
	}
	for _, n := range snap["one"].Nodes {
		if n.Name != node {
			continue
		}
		if len(n.ManagedFields) > 0 || n.Status.NodeInfo.KubeletVersion != "" || len(n.Status.Conditions) != 0 {
			t.Errorf("cached node was not slimmed: %+v", n)
		}
		if n.Annotations[kilov1alpha1.AnnotationKey] == "" || n.Spec.PodCIDR == "" || len(n.Status.Addresses) == 0 || n.UID == "" {
			t.Errorf("cached node lost what the planner needs: %+v", n)
		}
	}

	// A Node change triggers the change handler.
	changes.reset()
	start := time.Now()
	if err := h.env.AnnotateNode(h.ctx, member1, node, map[string]string{kilov1alpha1.AnnotationLocation: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 5*time.Second, "change reported for a node annotation", changes.seen(meshKey(mesh)))
	t.Logf("node change reported %s after the update", time.Since(start).Round(time.Millisecond))
	framework.EventuallyT(t, 5*time.Second, "annotation in the cache", func() error {
		for _, n := range m.Snapshot(mesh)["one"].Nodes {
			if n.Name == node && n.Annotations[kilov1alpha1.AnnotationLocation] == "elsewhere" {
				return nil
			}
		}
		return errors.New("not yet")
	})

	// Peers: written through PeerClient, read from the cache as typed objects.
	pc, err := m.PeerClient(mesh, "two")
	if err != nil {
		t.Fatal(err)
	}
	_, pub, err := framework.NewWireGuardKey()
	if err != nil {
		t.Fatal(err)
	}
	peerName := framework.UniqueName("peer")
	peer := &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{Name: peerName, Labels: map[string]string{"test": "clusters"}},
		Spec: kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.10.0.0/24"}, PublicKey: pub,
			Endpoint: &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.1"}, Port: 51820}},
	}
	changes.reset()
	created, err := pc.Apply(h.ctx, peer, metav1.ApplyOptions{FieldManager: "clusters-test"})
	if err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 5*time.Second, "change reported for a new peer", changes.seen(meshKey(mesh)))
	framework.EventuallyT(t, 5*time.Second, "peer in the cache", func() error {
		p := hasPeer(m.Snapshot(mesh)["two"], peerName)
		if p == nil || p.UID != created.UID || p.Labels["test"] != "clusters" || p.Spec.Endpoint == nil || p.Spec.PublicKey != pub {
			return fmt.Errorf("got %+v", p)
		}
		return nil
	})
	created.Spec.AllowedIPs = []string{"10.10.0.0/24", "10.11.0.0/24"}
	if _, err := pc.Update(h.ctx, created, metav1.UpdateOptions{FieldManager: "clusters-test"}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 5*time.Second, "updated peer in the cache", func() error {
		if p := hasPeer(m.Snapshot(mesh)["two"], peerName); p == nil || len(p.Spec.AllowedIPs) != 2 {
			return fmt.Errorf("got %+v", p)
		}
		return nil
	})
	if err := pc.Delete(h.ctx, peerName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 5*time.Second, "deleted peer gone from the cache", func() error {
		if hasPeer(m.Snapshot(mesh)["two"], peerName) != nil {
			return errors.New("still there")
		}
		return nil
	})
	if _, err := m.PeerClient(mesh, "nope"); !errors.Is(err, ErrUnknownCluster) {
		t.Errorf("PeerClient of an unknown cluster: %v", err)
	}
}

func (h *harness) testSharedCaches(t *testing.T) {
	nsA, nsB := h.namespace(t), h.namespace(t)
	// Same content under two names in two namespaces: one cache.
	h.putSecret(t, nsA, "a-member", h.kubeconfig(member1, framework.UserAdmin))
	h.putSecret(t, nsB, "b-member", h.kubeconfig(member1, framework.UserAdmin))
	meshA := newMesh(nsA, "a", localEntry("host"), remoteEntry("member", "a-member"))
	meshB := newMesh(nsB, "b", localEntry("host"), remoteEntry("member", "b-member"))
	m, _ := h.startManager(t)
	m.Ensure(meshA)
	m.Ensure(meshB)
	m.Ensure(meshA) // idempotent
	framework.EventuallyT(t, 30*time.Second, "mesh a usable", allUsable(m, meshA))
	framework.EventuallyT(t, 30*time.Second, "mesh b usable", allUsable(m, meshB))
	wantStats := func(want Stats) func() error {
		return func() error {
			if got := m.stats(); got != want {
				return fmt.Errorf("stats %+v, want %+v", got, want)
			}
			return nil
		}
	}
	// local + member 1, each with a Node and a Peer informer; two Secrets.
	framework.EventuallyT(t, 5*time.Second, "shared caches", wantStats(Stats{Clusters: 2, Informers: 4, SecretWatches: 2}))

	// Other credentials for the same cluster never share a cache.
	h.putSecret(t, nsA, "c-member", h.kubeconfig(member1, userReader))
	meshC := newMesh(nsA, "c", localEntry("host"), remoteEntry("member", "c-member"))
	m.Ensure(meshC)
	framework.EventuallyT(t, 30*time.Second, "mesh c usable", allUsable(m, meshC))
	framework.EventuallyT(t, 5*time.Second, "separate cache for other credentials", wantStats(Stats{Clusters: 3, Informers: 6, SecretWatches: 3}))

	m.Forget(nsA, "c")
	framework.EventuallyT(t, 5*time.Second, "cache of c stopped", wantStats(Stats{Clusters: 2, Informers: 4, SecretWatches: 2}))
	m.Forget(nsA, "a")
	framework.EventuallyT(t, 5*time.Second, "caches kept for b", wantStats(Stats{Clusters: 2, Informers: 4, SecretWatches: 1}))
	if err := allUsable(m, meshB)(); err != nil {
		t.Errorf("mesh b after a was forgotten: %v", err)
	}
	m.Forget(nsB, "b")
	framework.EventuallyT(t, 5*time.Second, "everything stopped", wantStats(Stats{}))
	if st := m.Snapshot(meshB)["member"]; st.Reason != ErrPending {
		t.Errorf("forgotten mesh: %+v, want Pending", st)
	}
}

func (h *harness) testSecretRotation(t *testing.T) {
	ns := h.namespace(t)
	on1, on2 := h.createNode(t, member1, "only-on-1"), h.createNode(t, member2, "only-on-2")
	h.putSecret(t, ns, "member", h.kubeconfig(member1, framework.UserAdmin))
	mesh := newMesh(ns, "rot", localEntry("host"), remoteEntry("member", "member"))
	m, changes := h.startManager(t)
	m.Ensure(mesh)
	framework.EventuallyT(t, 30*time.Second, "usable", allUsable(m, mesh))
	if st := m.Snapshot(mesh)["member"]; !hasNode(st, on1) || hasNode(st, on2) {
		t.Fatalf("member shows the wrong cluster before rotation")
	}
	hostNodes := len(m.Snapshot(mesh)["host"].Nodes)

	// Watch the other cluster's state all along the rotations: no gap.
	var gaps []string
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(5 * time.Millisecond):
			}
			st := m.Snapshot(mesh)["host"]
			if err := usable(st); err != nil || len(st.Nodes) != hostNodes {
				gaps = append(gaps, fmt.Sprintf("%v nodes=%d", err, len(st.Nodes)))
			}
		}
	}()

	// To another cluster.
	changes.reset()
	start := time.Now()
	h.putSecret(t, ns, "member", h.kubeconfig(member2, framework.UserAdmin))
	framework.EventuallyT(t, 30*time.Second, "rotated to member 2", func() error {
		st := m.Snapshot(mesh)["member"]
		if err := usable(st); err != nil {
			return err
		}
		if !hasNode(st, on2) || hasNode(st, on1) {
			return errors.New("still the old cluster's nodes")
		}
		return nil
	})
	t.Logf("Secret pointed at another cluster: new caches synced %s after the update", time.Since(start).Round(time.Millisecond))
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))
	framework.EventuallyT(t, 5*time.Second, "old caches stopped", func() error {
		if s := m.stats(); s.Clusters != 2 || s.Informers != 4 {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})

	// To credentials without rights on that cluster: reachable, forbidden.
	h.putSecret(t, ns, "member", h.kubeconfig(member2, framework.UserTenantA))
	framework.EventuallyT(t, 30*time.Second, "forbidden credentials reported", func() error {
		st := m.Snapshot(mesh)["member"]
		if st.Reason != ErrForbidden || !st.Reachable || st.Synced {
			return fmt.Errorf("reachable=%v synced=%v reason=%q err=%q", st.Reachable, st.Synced, st.Reason, st.LastError)
		}
		if strings.Contains(st.LastError, h.env.Token(framework.UserTenantA)) {
			t.Errorf("LastError holds the token: %q", st.LastError)
		}
		return nil
	})
	if !m.Settled(mesh) {
		t.Error("a forbidden cluster holds readiness")
	}

	// To new valid credentials: usable again, no restart.
	h.putSecret(t, ns, "member", h.kubeconfig(member2, userReader))
	framework.EventuallyT(t, 30*time.Second, "usable with new credentials", allUsable(m, mesh))
	if st := m.Snapshot(mesh)["member"]; !hasNode(st, on2) {
		t.Error("new credentials: node missing")
	}

	close(stopSampling)
	<-sampled
	if len(gaps) > 0 {
		t.Errorf("the host cluster's state had %d gaps during rotations, first: %s", len(gaps), gaps[0])
	}
}

func (h *harness) testRefusals(t *testing.T) {
	ns := h.namespace(t)
	token := h.env.Token(framework.UserAdmin)
	withExec := h.mutatedKubeconfig(t, member1, framework.UserAdmin, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/true", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	})
	plainHTTP := h.mutatedKubeconfig(t, member1, framework.UserAdmin, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
		c.Server = strings.Replace(c.Server, "https://", "http://", 1)
	})
	insecure := h.mutatedKubeconfig(t, member1, framework.UserAdmin, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
		c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil
	})
	h.putSecret(t, ns, "exec", withExec)
	h.putSecret(t, ns, "http", plainHTTP)
	h.putSecret(t, ns, "insecure", insecure)
	h.putSecret(t, ns, "garbage", []byte("current-context: [\n"+token))
	if _, err := h.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(ns).Create(h.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "wrong-key", Namespace: ns}, Data: map[string][]byte{"config": h.kubeconfig(member1, framework.UserAdmin)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	noRef := meshv1alpha1.ClusterEntry{Name: "no-ref"}
	mesh := newMesh(ns, "bad", localEntry("host"), remoteEntry("exec", "exec"), remoteEntry("http", "http"),
		remoteEntry("insecure", "insecure"), remoteEntry("garbage", "garbage"), remoteEntry("wrong-key", "wrong-key"),
		remoteEntry("missing", "missing"), noRef)
	m, changes := h.startManager(t)
	m.Ensure(mesh)
	want := map[string]Reason{
		"exec": ErrExecPlugin, "http": ErrNotHTTPS, "insecure": ErrInsecureSkipTLSVerify, "garbage": ErrKubeconfigInvalid,
		"wrong-key": ErrSecretKeyNotFound, "missing": ErrSecretNotFound, "no-ref": ErrNoSecretRef,
	}
	framework.EventuallyT(t, 30*time.Second, "refusals reported", func() error {
		snap := m.Snapshot(mesh)
		if err := usable(snap["host"]); err != nil {
			return err
		}
		for name, reason := range want {
			st := snap[name]
			if st.Reason != reason || st.Reachable || st.Synced || !strings.Contains(st.LastError, string(reason)) {
				return fmt.Errorf("%s: reason %q err %q, want %s", name, st.Reason, st.LastError, reason)
			}
		}
		return nil
	})
	for name, st := range m.Snapshot(mesh) {
		t.Logf("%s: %s", name, st.LastError)
		if strings.Contains(st.LastError, token) || strings.Contains(st.LastError, "BEGIN") {
			t.Errorf("%s: LastError quotes secret content: %q", name, st.LastError)
		}
	}
	if !m.Settled(mesh) {
		t.Error("refused clusters hold readiness")
	}
	if s := m.stats(); s.Clusters != 1 {
		t.Errorf("refused kubeconfigs got caches: %+v", s)
	}
	if _, err := m.PeerClient(mesh, "exec"); !errors.Is(err, ErrExecPlugin) {
		t.Errorf("PeerClient of a refused cluster: %v", err)
	}

	// Fixing a Secret, or creating the missing one, takes effect live.
	changes.reset()
	h.putSecret(t, ns, "exec", h.kubeconfig(member1, framework.UserAdmin))
	h.putSecret(t, ns, "missing", h.kubeconfig(member2, framework.UserAdmin))
	framework.EventuallyT(t, 30*time.Second, "fixed clusters usable", func() error {
		snap := m.Snapshot(mesh)
		for _, name := range []string{"exec", "missing"} {
			if err := usable(snap[name]); err != nil {
				return err
			}
		}
		return nil
	})
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))

	// The administrator may allow insecure-skip-tls-verify.
	lax, _ := h.startManager(t, func(c *Config) { c.AllowInsecureSkipTLSVerify = true })
	laxMesh := newMesh(ns, "lax", localEntry("host"), remoteEntry("insecure", "insecure"))
	lax.Ensure(laxMesh)
	framework.EventuallyT(t, 30*time.Second, "insecure allowed", allUsable(lax, laxMesh))
}

func (h *harness) testNoPeerCRD(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member", h.kubeconfig(member2, framework.UserAdmin))
	mesh := newMesh(ns, "crd", localEntry("host"), remoteEntry("member", "member"))
	m, changes := h.startManager(t)
	m.Ensure(mesh)
	framework.EventuallyT(t, 30*time.Second, "usable", allUsable(m, mesh))
	informers := m.stats().Informers

	crds := h.env.Dynamic(member2, framework.UserAdmin).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	changes.reset()
	start := time.Now()
	if err := crds.Delete(h.ctx, framework.PeerCRDName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 30*time.Second, "missing Peer CRD reported", func() error {
		st := m.Snapshot(mesh)["member"]
		if st.PeerCRD || !st.Synced || !st.Reachable || st.Peers != nil || st.Reason != "" {
			return fmt.Errorf("peerCRD=%v synced=%v reachable=%v peers=%d reason=%q err=%q", st.PeerCRD, st.Synced, st.Reachable, len(st.Peers), st.Reason, st.LastError)
		}
		return nil
	})
	t.Logf("Peer CRD removal seen %s after the delete call", time.Since(start).Round(time.Millisecond))
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))
	framework.EventuallyT(t, 5*time.Second, "Peer informer stopped", func() error {
		if got := m.stats().Informers; got != informers-1 {
			return fmt.Errorf("%d informers, want %d", got, informers-1)
		}
		return nil
	})
	if _, err := m.PeerClient(mesh, "member"); !errors.Is(err, ErrPeerCRDMissing) {
		t.Errorf("PeerClient without the CRD: %v", err)
	}
	if !m.Settled(mesh) {
		t.Error("a cluster without the Peer CRD holds readiness")
	}

	// Installing it again brings the Peer informer back.
	path, err := h.env.PeerCRDPath()
	if err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 60*time.Second, "Peer CRD re-created", func() error {
		// The old CRD may still be finishing its deletion.
		if _, _, err := h.env.Kubectl(h.ctx, member2, framework.UserAdmin, "apply", "-f", path); err != nil {
			return err
		}
		return nil
	})
	if err := h.env.WaitCRDEstablished(h.ctx, member2, framework.PeerCRDName); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 30*time.Second, "Peer CRD seen again", allUsable(m, mesh))
	framework.EventuallyT(t, 5*time.Second, "Peer informer running", func() error {
		if got := m.stats().Informers; got != informers {
			return fmt.Errorf("%d informers, want %d", got, informers)
		}
		return nil
	})
}

func (h *harness) testStoppedCluster(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	h.putSecret(t, ns, "member-2", h.kubeconfig(member2, framework.UserAdmin))
	mesh := newMesh(ns, "down", localEntry("host"), remoteEntry("one", "member-1"), remoteEntry("two", "member-2"))
	m, changes := h.startManager(t)
	m.Ensure(mesh)
	before := h.createNode(t, member2, "before-stop")
	framework.EventuallyT(t, 30*time.Second, "usable", allUsable(m, mesh))
	framework.EventuallyT(t, 10*time.Second, "node in the cache", func() error {
		if !hasNode(m.Snapshot(mesh)["two"], before) {
			return errors.New("not yet")
		}
		return nil
	})
	oneNodes := len(m.Snapshot(mesh)["one"].Nodes)

	changes.reset()
	// StopCluster sends SIGTERM and waits for the exit (SIGKILL after 5s):
	// measure from the signal, not from its return.
	start := time.Now()
	var stopErr error
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		stopErr = h.env.StopCluster(member2)
	}()
	defer func() {
		// Leave the cluster running for the next tests, whatever happened.
		<-stopped
		if !h.env.ClusterRunning(member2) {
			if err := h.env.StartCluster(h.ctx, member2); err != nil {
				t.Errorf("restarting cluster %d: %v", member2, err)
			}
		}
	}()
	var slowest time.Duration
	took := framework.EventuallyT(t, 20*time.Second, "unreachable", func() error {
		t0 := time.Now()
		snap := m.Snapshot(mesh)
		slowest = max(slowest, time.Since(t0))
		if snap["two"].Reachable {
			return errors.New("still reachable")
		}
		return nil
	})
	<-stopped
	if stopErr != nil {
		t.Fatal(stopErr)
	}
	t.Logf("unreachable seen %s after SIGTERM to kube-apiserver (it exited after %s): %s", took.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond), m.Snapshot(mesh)["two"].LastError)
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))

	// While it is down: the other clusters are served, the last known
	// objects of the stopped one are kept, and Snapshot stays fast.
	for range 20 {
		t0 := time.Now()
		snap := m.Snapshot(mesh)
		slowest = max(slowest, time.Since(t0))
		if err := usable(snap["one"]); err != nil || len(snap["one"].Nodes) != oneNodes {
			t.Errorf("member 1 while member 2 is down: %v nodes=%d", err, len(snap["one"].Nodes))
		}
		two := snap["two"]
		if two.Reachable || two.Reason != ErrUnreachable || two.LastError == "" || !two.Synced || !hasNode(two, before) {
			t.Errorf("member 2 while down: reachable=%v reason=%q err=%q synced=%v kept node=%v",
				two.Reachable, two.Reason, two.LastError, two.Synced, hasNode(two, before))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("slowest Snapshot while a member was down: %s", slowest)
	if slowest > 100*time.Millisecond {
		t.Errorf("Snapshot took %s with a member down", slowest)
	}
	if !m.Settled(mesh) {
		t.Error("an unreachable cluster holds readiness")
	}
	if _, err := m.PeerClient(mesh, "two"); err != nil {
		t.Errorf("PeerClient of an unreachable cluster: %v (writes should fail on their own)", err)
	}

	h.restartAndCheck(t, m, mesh, member2, "two")

	// A crash (SIGKILL) breaks the watches at once: the informers' failed
	// calls trigger the probe, no need to wait for its tick.
	pid := h.env.ClusterPid(member2)
	if !h.env.ClusterRunning(member2) || pid == 0 {
		t.Fatalf("kube-apiserver of cluster %d is not running (pid %d)", member2, pid)
	}
	changes.reset()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	took = framework.EventuallyT(t, 20*time.Second, "unreachable after a crash", func() error {
		if m.Snapshot(mesh)["two"].Reachable {
			return errors.New("still reachable")
		}
		return nil
	})
	t.Logf("unreachable seen %s after SIGKILL to kube-apiserver: %s", took.Round(time.Millisecond), m.Snapshot(mesh)["two"].LastError)
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))
	framework.EventuallyT(t, 10*time.Second, "process gone", func() error {
		if h.env.ClusterRunning(member2) {
			return errors.New("still running")
		}
		return nil
	})
	h.restartAndCheck(t, m, mesh, member2, "two")
}

// restartAndCheck starts a stopped cluster and checks that the mesh's
// entry becomes usable again and follows new objects.
func (h *harness) restartAndCheck(t *testing.T, m *Manager, mesh *meshv1alpha1.ClusterMesh, cluster int, entry string) {
	t.Helper()
	start := time.Now()
	if err := h.env.StartCluster(h.ctx, cluster); err != nil {
		t.Fatal(err)
	}
	ready := time.Since(start)
	took := framework.EventuallyT(t, 20*time.Second, "reachable again", func() error {
		return usable(m.Snapshot(mesh)[entry])
	})
	t.Logf("kube-apiserver ready %s after start; reachable again %s after that", ready.Round(time.Millisecond), took.Round(time.Millisecond))

	// The caches follow the cluster again at once, not after the informer's backoff.
	start = time.Now()
	after := h.createNode(t, cluster, "after-restart")
	framework.EventuallyT(t, 10*time.Second, "new node after restart", func() error {
		if !hasNode(m.Snapshot(mesh)[entry], after) {
			return errors.New("not yet")
		}
		return nil
	})
	t.Logf("node created after the restart visible %s after creation", time.Since(start).Round(time.Millisecond))
}

// testFrozenCluster stops kube-apiserver with SIGSTOP: connections stay
// open and nothing answers, as with a network partition, so only the probe
// can notice.
func (h *harness) testFrozenCluster(t *testing.T) {
	pid := h.env.ClusterPid(member1)
	if !h.env.ClusterRunning(member1) || pid == 0 {
		t.Fatalf("kube-apiserver of cluster %d is not running (pid %d): an earlier test failed to restart it", member1, pid)
	}
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	mesh := newMesh(ns, "frozen", localEntry("host"), remoteEntry("one", "member-1"))
	m, _ := h.startManager(t, func(c *Config) { c.ProbeInterval = DefaultProbeInterval })
	m.Ensure(mesh)
	framework.EventuallyT(t, 30*time.Second, "usable", allUsable(m, mesh))

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	took := framework.EventuallyT(t, DefaultProbeInterval+DefaultProbeTimeout+5*time.Second, "frozen server unreachable", func() error {
		if m.Snapshot(mesh)["one"].Reachable {
			return errors.New("still reachable")
		}
		return nil
	})
	t.Logf("frozen kube-apiserver seen unreachable after %s (probe interval %s, timeout %s): %s", took.Round(time.Millisecond),
		DefaultProbeInterval, DefaultProbeTimeout, m.Snapshot(mesh)["one"].LastError)
	if err := usable(m.Snapshot(mesh)["host"]); err != nil {
		t.Errorf("host cluster while member 1 is frozen: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	took = framework.EventuallyT(t, DefaultProbeInterval+DefaultProbeTimeout+5*time.Second, "thawed server reachable", allUsable(m, mesh))
	t.Logf("thawed kube-apiserver reachable again after %s", took.Round(time.Millisecond))
}
