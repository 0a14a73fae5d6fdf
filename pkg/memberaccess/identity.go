package memberaccess

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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// IdentityNamespace is the namespace whose UID identifies a cluster.
	IdentityNamespace = metav1.NamespaceSystem
	// maxIdentityBytes bounds the answer read for it.
	maxIdentityBytes = 1 << 20
)

// ReadIdentity reads the identity of the cluster whose API server is at
// server through client, which must not follow redirects; `kubectl mesh
// join` uses it to tell whether an entry would change clusters. definite is
// false when the answer says nothing about the cluster (no connection).
func ReadIdentity(ctx context.Context, client *http.Client, server string) (id string, e *Error, definite bool) {
	url := strings.TrimSuffix(server, "/") + "/api/v1/namespaces/" + IdentityNamespace
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", newError(ErrListWatch, "", "building the identity request: "+err.Error()), true
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", newError(ErrUnreachable, "", "reading the cluster's identity: "+ErrorText(err)), false
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return "", Redirected(resp.StatusCode), true
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", newError(ErrForbidden, "", fmt.Sprintf("the credentials may not get namespace %s (HTTP %d), so the cluster's identity is unknown and the mesh claims nothing there; "+
			"the member's role needs get on namespaces/%s (artifacts/member)", IdentityNamespace, resp.StatusCode, IdentityNamespace)), true
	case resp.StatusCode != http.StatusOK:
		return "", newError(ErrListWatch, "", fmt.Sprintf("reading namespace %s: the API server answered HTTP %d", IdentityNamespace, resp.StatusCode)), false
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
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxIdentityBytes)).Decode(&ns); err != nil || ns.Metadata.Name != IdentityNamespace || ns.Metadata.UID == "" {
		return "", newError(ErrListWatch, "", fmt.Sprintf("the API server's answer for namespace %s is not a namespace with a UID", IdentityNamespace)), true
	}
	return ns.Metadata.UID + "@" + root, nil, true
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
