package clusters

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// A member cluster's identity says which physical cluster a connection
// reaches, whatever URL and credentials lead there: two meshes that put
// Peers on one cluster must not claim one network there. It is read, not
// taken from the kubeconfig: a tenant can write any URL, but only with
// working credentials does it learn the cluster's kube-system UID (the
// namespace exists on every cluster and is never recreated), and only a
// server whose certificate chains to the kubeconfig's CA is believed. The
// identity is that UID with the fingerprint of the CA certificate the
// connection was verified against, so a server of the tenant's own that
// answers another cluster's UID still has an identity of its own. A
// connection whose identity is not known (credentials refused, member RBAC
// without get on namespaces/kube-system, TLS verification skipped) claims
// nothing.

const (
	// identityNamespace is the namespace whose UID identifies a cluster.
	identityNamespace = metav1.NamespaceSystem
	// identityRefresh is how often a known identity is read again: the
	// server behind a name may change.
	identityRefresh = time.Minute
	// maxIdentityBytes bounds the answer read for it.
	maxIdentityBytes = 1 << 20
)

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
func (c *cluster) readIdentity(ctx context.Context) (id string, e *Error, definite bool) {
	return ReadIdentity(ctx, c.identityClient, c.server)
}

// ReadIdentity reads the identity of the cluster whose API server is at
// server through client, which must not follow redirects; `kubectl mesh
// join` uses it to tell whether an entry would change clusters. definite is
// false when the answer says nothing about the cluster (no connection).
func ReadIdentity(ctx context.Context, client *http.Client, server string) (id string, e *Error, definite bool) {
	url := strings.TrimSuffix(server, "/") + "/api/v1/namespaces/" + identityNamespace
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", newError(ErrListWatch, "", "building the identity request: "+err.Error()), true
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", newError(ErrUnreachable, "", "reading the cluster's identity: "+memberErrorText(err)), false
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return "", redirected(resp.StatusCode), true
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", newError(ErrForbidden, "", fmt.Sprintf("the credentials may not get namespace %s (HTTP %d), so the cluster's identity is unknown and the mesh claims nothing there; "+
			"the member's role needs get on namespaces/%s (artifacts/member)", identityNamespace, resp.StatusCode, identityNamespace)), true
	case resp.StatusCode != http.StatusOK:
		return "", newError(ErrListWatch, "", fmt.Sprintf("reading namespace %s: the API server answered HTTP %d", identityNamespace, resp.StatusCode)), false
	}
	root := verifiedRoot(resp)
	if root == "" {
		return "", newError(ErrListWatch, "", "the connection's certificate was not verified (TLS verification skipped), so the cluster's identity is unknown and the mesh claims nothing there"), true
	}
	var ns struct {
		Metadata struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxIdentityBytes)).Decode(&ns); err != nil || ns.Metadata.Name != identityNamespace || ns.Metadata.UID == "" {
		return "", newError(ErrListWatch, "", fmt.Sprintf("the API server's answer for namespace %s is not a namespace with a UID", identityNamespace)), true
	}
	return ns.Metadata.UID + "@" + root, nil, true
}

// notLocal refuses the identity of a remote cluster whose kube-system UID
// is the local cluster's, whatever the CA: a kubeconfig of a tenant's that
// reaches the host (or a server answering as the host) would otherwise
// "share" the host with every granted mesh without any grant. Until the
// local UID is known no remote identity is accepted.
func (c *cluster) notLocal(ctx context.Context, id string) *Error {
	local, err := c.opts.localUID(ctx)
	if err != nil {
		return newError(ErrPending, "", "the local cluster's identity is not known yet, so neither is this cluster's: "+err.Error())
	}
	if uid, _, _ := strings.Cut(id, "@"); uid == local {
		return newError(ErrIsLocalCluster, "", "the kubeconfig reaches the cluster this server runs in (its kube-system namespace has the local cluster's UID): "+
			"a mesh reaches it only as its local cluster (local: true), with Peer rights there or a ClusterMeshGrant")
	}
	return nil
}

// verifiedRoot is the fingerprint of the CA certificate the connection was
// verified against (the least, should there be several chains), or "".
func verifiedRoot(resp *http.Response) string {
	if resp.TLS == nil {
		return ""
	}
	best := ""
	for _, chain := range resp.TLS.VerifiedChains {
		if len(chain) == 0 {
			continue
		}
		if fp := fingerprint(chain[len(chain)-1]); best == "" || fp < best {
			best = fp
		}
	}
	return best
}

func fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:8])
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
func (h *health) setIdentity(id string, err *Error, definite bool) bool {
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
	ns, err := m.secretClient.CoreV1().Namespaces().Get(ctx, identityNamespace, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading namespace %s of the local cluster: %w", identityNamespace, err)
	}
	m.localUID = string(ns.UID)
	return m.localUID, nil
}
