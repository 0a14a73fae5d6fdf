package clusters

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// What a member cluster's identity is and how it is read is
// memberaccess.ReadIdentity's; the caches read it again from each probe.

// identityRefresh is how often a known identity is read again: the server
// behind a name may change.
const identityRefresh = time.Minute

// verifyIdentity reads the cluster's identity when it is unknown or due
// again. It runs from the probe, after the cluster answered.
func (c *cluster) verifyIdentity(ctx context.Context) {
	if !c.health.identityDue(identityRefresh) {
		return
	}
	id, err, definite := c.readIdentity(ctx)
	if err == nil && c.id != localID {
		err = c.notLocal(ctx, id)
		if err != nil {
			id = ""
		}
	}
	if c.health.setIdentity(id, err, definite) {
		klog.FromContext(ctx).Info("Member cluster identity", "identity", id, "problem", errorText(err))
	}
}

// readIdentity returns the identity, or why it cannot be known; definite
// is false when the answer says nothing about the cluster (no connection),
// so that a known identity is kept.
func (c *cluster) readIdentity(ctx context.Context) (id string, e *memberaccess.Error, definite bool) {
	return memberaccess.ReadIdentity(ctx, c.identityClient, c.server)
}

// notLocal refuses the identity of a remote cluster whose kube-system UID
// is the local cluster's, whatever the CA: a kubeconfig of a tenant's that
// reaches the host (or a server answering as the host) would otherwise
// "share" the host with every granted mesh without any grant. Until the
// local UID is known no remote identity is accepted.
func (c *cluster) notLocal(ctx context.Context, id string) *memberaccess.Error {
	local, err := c.opts.localUID(ctx)
	if err != nil {
		return newError(memberaccess.ErrPending, "", "the local cluster's identity is not known yet, so neither is this cluster's: "+err.Error())
	}
	if uid, _, _ := strings.Cut(id, "@"); uid == local {
		return newError(memberaccess.ErrIsLocalCluster, "", "the kubeconfig reaches the cluster this server runs in (its kube-system namespace has the local cluster's UID): "+
			"a mesh reaches it only as its local cluster (local: true), with Peer rights there or a ClusterMeshGrant")
	}
	return nil
}

// identityDue reports whether the identity should be read now, and notes
// the attempt.
func (h *health) identityDue(refresh time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	if h.identity != "" && now.Sub(h.identityAt) < refresh {
		return false
	}
	h.identityAt = now
	return true
}

// setIdentity records what was read, and reports whether the identity or
// why it is unknown changed. A failure that says nothing about the cluster
// keeps a known identity.
func (h *health) setIdentity(id string, err *memberaccess.Error, definite bool) bool {
	h.mu.Lock()
	if err != nil && !definite {
		h.mu.Unlock()
		return false
	}
	changed := h.identity != id
	news := changed || !sameError(h.identityErr, err)
	h.identity, h.identityErr = id, err
	h.mu.Unlock()
	if changed {
		h.onChange()
	}
	return news
}

// localSystemUID is the UID of the local cluster's kube-system namespace,
// read with the server's own client once it can be.
func (m *Manager) localSystemUID(ctx context.Context) (string, error) {
	m.localUIDMu.Lock()
	defer m.localUIDMu.Unlock()
	if m.localUID != "" {
		return m.localUID, nil
	}
	ns, err := m.secretClient.CoreV1().Namespaces().Get(ctx, memberaccess.IdentityNamespace, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading namespace %s of the local cluster: %w", memberaccess.IdentityNamespace, err)
	}
	m.localUID = string(ns.UID)
	return m.localUID, nil
}
