//go:build integration

package clusters

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testServerPolicy: a member API server outside the namespace's policy is
// refused before anything is built for it, and a policy that changes
// takes effect on the connections.
func (h *harness) testServerPolicy(t *testing.T) {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("one", "member-1"))
	allowed := mustPrefixes("203.0.113.0/24") // not where the member listens
	m, _ := h.startManager(t, func(c *Config) {
		c.ServerPolicy = ServerPolicyFunc(func(string) []netip.Prefix { return allowed })
	})
	m.Ensure(mesh)
	framework.EventuallyT(t, 30*time.Second, "refused by the policy", func() error {
		st := m.Snapshot(mesh)["one"]
		if st.Reason != ErrServerNotAllowed || st.Reachable || !strings.Contains(st.LastError, "127.0.0.1") {
			return fmt.Errorf("reason %q err %q", st.Reason, st.LastError)
		}
		return nil
	})
	if s := m.stats(); s.Clusters != 1 {
		t.Errorf("a refused server got a connection: %+v", s)
	}
	allowed = mustPrefixes(framework.LoopbackServers...)
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
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("a1", "admin-1"), remoteEntry("r1", "reader-1"),
		remoteEntry("a2", "admin-2"), remoteEntry("b1", "bogus-1"))
	m, _ := h.startManager(t)
	m.Ensure(mesh)
	var ids map[string]string
	framework.EventuallyT(t, 30*time.Second, "identities verified", func() error {
		ids = m.Identities(mesh)
		for _, name := range []string{"host", "a1", "r1", "a2"} {
			if ids[name] == "" {
				return fmt.Errorf("%s not verified yet: %v", name, ids)
			}
		}
		if st := m.Snapshot(mesh)["b1"]; st.Reason != ErrUnauthorized {
			return fmt.Errorf("bogus credentials: %q", st.Reason)
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
	case m.LocalIdentity() != ids["host"]:
		t.Errorf("LocalIdentity %q, the local entry's %q", m.LocalIdentity(), ids["host"])
	}
	server, err := ServerIdentity(h.kubeconfig(member1, framework.UserAdmin))
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
	m.Ensure(mesh)
	framework.EventuallyT(t, 30*time.Second, "too many nodes reported", func() error {
		st := m.Snapshot(mesh)["two"]
		if st.Reason != ErrTooManyNodes || st.Synced || len(st.Nodes) != 0 {
			return fmt.Errorf("reason %q synced %v nodes %d: %s", st.Reason, st.Synced, len(st.Nodes), st.LastError)
		}
		return nil
	})
	if !m.Settled(mesh) {
		t.Error("a cluster over the node limit holds the mesh up")
	}
	if err := usable(m.Snapshot(mesh)["host"]); err != nil {
		t.Errorf("the local cluster: %v", err)
	}
}
