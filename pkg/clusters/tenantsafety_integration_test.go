//go:build integration

package clusters

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testServerPolicy: a member API server outside the namespace's policy is
// refused before anything is built for it, and a policy that changes
// takes effect on the connections.
func (h *harness) testServerPolicy(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("one", "member-1"))
	allowed := prefixes("203.0.113.0/24") // not where the member listens
	m, _ := h.startManager(t, func(c *Config) {
		c.ServerPolicy = memberaccess.ServerPolicyFunc(func(string) []netip.Prefix { return allowed })
	})
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "refused by the policy", func() error {
		st := m.Snapshot(mesh)["one"]
		if st.Reason != memberaccess.ErrServerNotAllowed || st.Reachable || !strings.Contains(st.LastError, "127.0.0.1") {
			return fmt.Errorf("reason %q err %q", st.Reason, st.LastError)
		}
		return nil
	})
	if s := m.stats(); s.Clusters != 1 {
		t.Errorf("a refused server got a connection: %+v", s)
	}
	allowed = prefixes(framework.LoopbackServers...)
	m.ServerPolicyChanged()
	framework.EventuallyT(t, 30*time.Second, "usable once allowed", allUsable(m, mesh))
}

// testIdentity: the identity of a cluster is what it is, whatever the
// credentials; another cluster has another; credentials that do not
// authenticate verify nothing.
func (h *harness) testIdentity(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "admin-1", h.kubeconfig(member1, framework.UserAdmin))
	h.putSecret(t, ns, "reader-1", h.kubeconfig(member1, userReader))
	h.putSecret(t, ns, "admin-2", h.kubeconfig(member2, framework.UserAdmin))
	h.putSecret(t, ns, "bogus-1", h.mutatedKubeconfig(t, member1, framework.UserAdmin, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Token = "not-a-token"
	}))
	// The host itself behind a remote entry: what a path on its own API
	// server answering for it would be verified as.
	h.putSecret(t, ns, "admin-0", h.kubeconfig(framework.HostCluster, framework.UserAdmin))
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("a1", "admin-1"), remoteEntry("r1", "reader-1"),
		remoteEntry("a2", "admin-2"), remoteEntry("b1", "bogus-1"), remoteEntry("h0", "admin-0"))
	m, _ := h.startManager(t)
	m.Follow(mesh)
	var ids map[string]string
	framework.EventuallyT(t, 30*time.Second, "identities verified", func() error {
		ids = m.Identities(mesh)
		for _, name := range []string{"host", "a1", "r1", "a2"} {
			if ids[name] == "" {
				return fmt.Errorf("%s not verified yet: %v", name, ids)
			}
		}
		if st := m.Snapshot(mesh)["b1"]; st.Reason != memberaccess.ErrUnauthorized {
			return fmt.Errorf("bogus credentials: %q", st.Reason)
		}
		if st := m.Snapshot(mesh)["h0"]; st.Reason != memberaccess.ErrIsLocalCluster || st.Synced || st.Nodes.Len() > 0 {
			return fmt.Errorf("the host behind a remote entry: %q, synced %v, %d nodes", st.Reason, st.Synced, st.Nodes.Len())
		}
		return nil
	})
	switch {
	case ids["a1"] != ids["r1"]:
		t.Errorf("one cluster, two identities: %v", ids)
	case ids["a1"] == ids["a2"] || ids["a1"] == ids["host"]:
		t.Errorf("two clusters, one identity: %v", ids)
	case ids["b1"] != "":
		t.Errorf("credentials that do not authenticate verified %q", ids["b1"])
	case ids["h0"] != "":
		t.Errorf("the host behind a remote entry has the identity %q", ids["h0"])
	case m.LocalIdentity() != ids["host"]:
		t.Errorf("LocalIdentity %q, the local entry's %q", m.LocalIdentity(), ids["host"])
	}
	server, err := memberaccess.ServerIdentity(h.kubeconfig(member1, framework.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.ServerIdentities(server); len(got) != 1 || got[0] != ids["a1"] {
		t.Errorf("ServerIdentities(%s) = %v, want [%s]", server, got, ids["a1"])
	}
}

// testNodeLimit: a cluster with more Nodes than the limit is not used,
// says why, and holds up nothing.
func (h *harness) testNodeLimit(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-2", h.kubeconfig(member2, framework.UserAdmin))
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("two", "member-2"))
	for range 3 {
		h.createNode(t, member2, "many")
	}
	nodes, err := h.env.Client(member2, framework.UserAdmin).CoreV1().Nodes().List(h.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := h.startManager(t, func(c *Config) { c.MaxNodes = len(nodes.Items) - 1 })
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "too many nodes reported", func() error {
		st := m.Snapshot(mesh)["two"]
		if st.Reason != memberaccess.ErrTooManyNodes || st.Synced || st.Nodes.Len() != 0 {
			return fmt.Errorf("reason %q synced %v nodes %d: %s", st.Reason, st.Synced, st.Nodes.Len(), st.LastError)
		}
		return nil
	})
	framework.EventuallyT(t, 30*time.Second, "the mesh settled, the local cluster usable", func() error {
		if !m.Settled(mesh) {
			return errors.New("a cluster over the node limit holds the mesh up")
		}
		return usable(m.Snapshot(mesh)["host"])
	})
}

// testPeerLimit: a tenant's cluster with more Peers than the limit is not
// used and says why; the local cluster, whose Peers this server writes for
// every mesh, is not limited.
func (h *harness) testPeerLimit(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("one", "member-1"))
	const limit = 3
	prefix := framework.UniqueName("limit")
	for _, cluster := range []int{framework.HostCluster, member1} {
		for i := range limit + 1 {
			h.createPeer(t, cluster, fmt.Sprintf("%s-%d", prefix, i))
		}
	}
	m, _ := h.startManager(t, func(c *Config) { c.MaxPeers = limit })
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "too many Peers reported", func() error {
		st := m.Snapshot(mesh)["one"]
		if st.Reason != memberaccess.ErrTooManyPeers || st.Synced || st.Peers.Len() != 0 || !strings.Contains(st.LastError, "--max-member-peers") {
			return fmt.Errorf("reason %q synced %v peers %d: %s", st.Reason, st.Synced, st.Peers.Len(), st.LastError)
		}
		return nil
	})
	framework.EventuallyT(t, 30*time.Second, "the local cluster usable with its Peers", func() error {
		st := m.Snapshot(mesh)["host"]
		if err := usable(st); err != nil {
			return err
		}
		if hasPeer(st, prefix+"-3") == nil {
			return fmt.Errorf("%d Peers cached of the local cluster, not %s-3", st.Peers.Len(), prefix)
		}
		return nil
	})
	for _, c := range m.Connections() {
		if strings.HasPrefix(c.Name(), "https://") && c.State.Synced {
			t.Errorf("the connection to a cluster over the Peer limit offers its Peers: %s", c.Name())
		}
	}
}

// createPeer creates a Peer of no mesh on cluster.
func (h *harness) createPeer(t *testing.T, cluster int, name string) {
	t.Helper()
	_, pub, err := framework.NewWireGuardKey()
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kilov1alpha1.SchemeGroupVersion.String(), "kind": kilov1alpha1.PeerKind,
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"allowedIPs": []any{"10.99.0.1/32"}, "publicKey": pub},
	}}
	if _, err := h.env.Dynamic(cluster, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).Create(h.ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.env.Dynamic(cluster, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}
