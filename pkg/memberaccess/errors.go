package memberaccess

import (
	"strings"
)

// Reason is a stable CamelCase identifier of why a member cluster cannot be
// used (fit for a condition's reason or an admission error). Reason is an
// error itself so that errors.Is(err, ErrExecPlugin) works on every error of
// this package.
type Reason string

func (r Reason) Error() string { return string(r) }

// Rules a kubeconfig must follow; ParseKubeconfig names the one broken.
// Kubeconfigs come from tenants: anything that would make this server run a
// program, read a file, use a proxy, act as someone else or talk in clear
// text is refused.
const (
	// ErrKubeconfigInvalid: empty, not YAML/JSON, or not a kubeconfig.
	ErrKubeconfigInvalid Reason = "KubeconfigInvalid"
	// ErrNoCurrentContext: current-context unset, or it names a context,
	// cluster or user the kubeconfig does not define.
	ErrNoCurrentContext Reason = "NoCurrentContext"
	// ErrExecPlugin: users[].user.exec (runs a program on the server).
	ErrExecPlugin Reason = "ExecPlugin"
	// ErrAuthProvider: users[].user.auth-provider (plugins, token refresh).
	ErrAuthProvider Reason = "AuthProvider"
	// ErrFilePath: tokenFile, client-certificate, client-key or
	// certificate-authority (would read the server's files).
	ErrFilePath Reason = "FilePath"
	// ErrProxyURL: clusters[].cluster.proxy-url.
	ErrProxyURL Reason = "ProxyURL"
	// ErrNotHTTPS: the server URL is not https.
	ErrNotHTTPS Reason = "NotHTTPS"
	// ErrServerURL: the server URL is malformed, has no host, or has a
	// query or fragment.
	ErrServerURL Reason = "InvalidServerURL"
	// ErrServerPath: the server URL's path is not a plain prefix: it holds
	// a segment of the Kubernetes API (api, apis, proxy: where proxy
	// subresources and aggregated APIs are), escapes or other characters.
	ErrServerPath Reason = "ServerPathNotAllowed"
	// ErrBasicAuth: username/password, or user info in the server URL.
	ErrBasicAuth Reason = "BasicAuth"
	// ErrImpersonation: as, as-uid, as-groups or as-user-extra.
	ErrImpersonation Reason = "Impersonation"
	// ErrInsecureSkipTLSVerify: insecure-skip-tls-verify without the
	// administrator's consent (clusters.Config.AllowInsecureSkipTLSVerify).
	ErrInsecureSkipTLSVerify Reason = "InsecureSkipTLSVerify"
	// ErrNoCertificateAuthority: no certificate-authority-data.
	ErrNoCertificateAuthority Reason = "NoCertificateAuthority"
	// ErrNoCredentials: neither a token nor client-certificate-data with
	// client-key-data.
	ErrNoCredentials Reason = "NoCredentials"
	// ErrIncompleteClientCertificate: client-certificate-data without
	// client-key-data or the other way round.
	ErrIncompleteClientCertificate Reason = "IncompleteClientCertificate"
	// ErrInvalidCertificateData: CA or client certificate/key data that does
	// not parse, or a key that does not match its certificate.
	ErrInvalidCertificateData Reason = "InvalidCertificateData"
	// ErrInvalidToken: a token with whitespace or control characters (it
	// could not be sent in a header).
	ErrInvalidToken Reason = "InvalidToken"
)

// Reasons about the Secret holding a member cluster's kubeconfig.
const (
	// ErrNoSecretRef: a non-local cluster without kubeconfigSecretRef.
	ErrNoSecretRef Reason = "NoKubeconfigSecretRef"
	// ErrSecretNotFound: the Secret does not exist in the mesh's namespace.
	ErrSecretNotFound Reason = "SecretNotFound"
	// ErrSecretKeyNotFound: the Secret has no such key.
	ErrSecretKeyNotFound Reason = "SecretKeyNotFound"
	// ErrSecretUnreadable: the server could not list or watch the Secret.
	ErrSecretUnreadable Reason = "SecretUnreadable"
)

// Reasons about a member cluster's state.
const (
	// ErrIsLocalCluster: a remote entry's kubeconfig reaches the cluster
	// this server runs in (its verified kube-system UID is the local
	// cluster's); it is not used, and claims nothing: reaching the host
	// takes local: true, and with it Peer rights or a grant.
	ErrIsLocalCluster Reason = "IsLocalCluster"
	// ErrPending: not known yet (mesh not followed yet, Secret not read yet,
	// cluster not probed yet).
	ErrPending Reason = "Pending"
	// ErrUnreachable: the cluster's API server does not answer, or answers
	// that it is not ready.
	ErrUnreachable Reason = "Unreachable"
	// ErrUnauthorized: the cluster rejects the credentials (HTTP 401).
	ErrUnauthorized Reason = "Unauthorized"
	// ErrForbidden: the credentials may not list or watch Nodes or Peers.
	ErrForbidden Reason = "Forbidden"
	// ErrListWatch: listing or watching failed for another reason.
	ErrListWatch Reason = "ListWatchFailed"
	// ErrPeerCRDMissing: the cluster does not serve kilo.squat.ai/v1alpha1 peers.
	ErrPeerCRDMissing Reason = "PeerCRDMissing"
	// ErrClusterReplaced: a PeerClient was used after its mesh stopped
	// using that cluster (Secret changed, mesh forgotten); get a new one.
	ErrClusterReplaced Reason = "ClusterReplaced"
	// ErrUnknownCluster: the mesh (as followed) has no cluster of that name.
	ErrUnknownCluster Reason = "UnknownCluster"
	// ErrServerNotAllowed: the API server's address is outside what the
	// ServerPolicy allows for the mesh's namespace; nothing is dialled.
	ErrServerNotAllowed Reason = "ServerNotAllowed"
	// ErrRedirect: the API server answered with a redirect, which is never
	// followed (it could point anywhere).
	ErrRedirect Reason = "Redirect"
	// ErrTooManyNodes: the cluster holds more Nodes than clusters.Config.MaxNodes;
	// none of them is used.
	ErrTooManyNodes Reason = "TooManyNodes"
	// ErrTooManyPeers: a tenant's cluster holds more Peers than
	// clusters.Config.MaxPeers; none of its Nodes and Peers is used.
	ErrTooManyPeers Reason = "TooManyPeers"
	// ErrCacheBudgetExceeded: what the caches would keep of a tenant's
	// cluster, Nodes and Peers together, weighs more than
	// clusters.Config.MaxCacheBytes; none of it is used.
	ErrCacheBudgetExceeded Reason = "CacheBudgetExceeded"
	// ErrNamespaceBudgetExceeded: what the caches would keep of the member
	// clusters of the mesh's namespace, this one with the others, is more
	// than the namespace's share (clusters.Config.MaxNamespaceCacheBytes, or its fair
	// share of clusters.Config.MaxTotalCacheBytes once that is taken); this cluster
	// is not used.
	ErrNamespaceBudgetExceeded Reason = "NamespaceMemberBudgetExceeded"
	// ErrAnswerTooLarge: an answer of the API server (a list page, one
	// watch event) is larger than this server reads.
	ErrAnswerTooLarge Reason = "AnswerTooLarge"
	// ErrMCSCRDMissing: the cluster does not serve the mcs-api CRDs
	// (multicluster.x-k8s.io/v1beta1 serviceexports and serviceimports).
	ErrMCSCRDMissing Reason = "MCSCRDMissing"
	// ErrServicesForbidden: the credentials may list and watch Nodes and
	// Peers but not what multi-cluster services read: the member identity
	// lacks its services rights. The cluster's services are not used and
	// nothing is written or deleted there.
	ErrServicesForbidden Reason = "ServicesForbidden"
	// ErrTooManyServiceExports: the cluster holds more ServiceExports than
	// clusters.Config.MaxServiceExports; none of its services is used.
	ErrTooManyServiceExports Reason = "TooManyServiceExports"
	// ErrTooManyEndpoints: an exported Service has more endpoints than
	// clusters.Config.MaxEndpointsPerService; none of the cluster's services is used.
	ErrTooManyEndpoints Reason = "TooManyEndpoints"
)

// Error is an error of this package with its Reason. Its text never holds
// secret content (tokens, keys, kubeconfig bytes).
type Error struct {
	Reason Reason
	// Field locates the problem, e.g. `users["ci"].user.exec` in a
	// kubeconfig, or `Secret tenant-a/member-1` for Secret problems.
	Field string
	// Message explains the problem to a human.
	Message string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	b.WriteString(" (")
	b.WriteString(string(e.Reason))
	b.WriteString(")")
	return b.String()
}

// Unwrap makes errors.Is(err, ErrExecPlugin) and the like work.
func (e *Error) Unwrap() error { return e.Reason }

func newError(reason Reason, field, message string) *Error {
	return &Error{Reason: reason, Field: field, Message: message}
}
