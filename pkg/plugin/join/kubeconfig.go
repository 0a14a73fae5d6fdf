package join

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
)

// Target is how the mesh server reaches a member cluster: what goes into
// the kubeconfig besides the credential.
type Target struct {
	// Server is the https URL of the member's API server.
	Server string
	// CAData is the PEM of the CA that signed its serving certificate.
	CAData []byte
	// TLSServerName overrides the name checked against that certificate.
	TLSServerName string
}

// TargetFrom takes server and CA from the caller's own configuration of the
// member cluster, never its credentials. server, if set, replaces the URL
// (the mesh server may reach the member at another address than the caller).
func TargetFrom(cfg *rest.Config, server string) (Target, error) {
	t := Target{Server: cfg.Host, TLSServerName: cfg.ServerName}
	if server != "" {
		t.Server = server
	}
	if cfg.Insecure {
		return Target{}, fmt.Errorf("the member kubeconfig skips TLS verification; the mesh server needs the cluster's CA: use a kubeconfig with certificate-authority(-data)")
	}
	// LoadTLSFiles reads certificate-authority paths into CAData; the mesh
	// server refuses paths, so the data itself goes into the Secret.
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return Target{}, fmt.Errorf("reading the member cluster's CA: %w", err)
	}
	t.CAData = cfg.CAData
	return t, nil
}

// BuildKubeconfig writes the self-contained kubeconfig the mesh server uses
// for a member cluster: server, CA data and the member identity's token,
// nothing else. It is checked with the server's own rules
// (clusters.ParseKubeconfig), so what join writes is what the server takes.
func BuildKubeconfig(cluster string, t Target, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{
		Server:                   t.Server,
		CertificateAuthorityData: t.CAData,
		TLSServerName:            t.TLSServerName,
	}
	cfg.AuthInfos[member.ServiceAccount] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: member.ServiceAccount}
	cfg.CurrentContext = cluster
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	if _, err := clusters.ParseKubeconfig(data, false); err != nil {
		return nil, fmt.Errorf("the kubeconfig for %s would be refused by the mesh server: %w", cluster, err)
	}
	return data, nil
}

// tokenClaims are the claims of a service account token that join reads.
type tokenClaims struct {
	Subject string `json:"sub"`
	Expiry  int64  `json:"exp"`
}

// readTokenClaims decodes the claims of a JWT without verifying it. Only
// the member cluster can verify the token; join asks it (a
// SelfSubjectReview) before it trusts a token it finds, and uses these
// claims only to see whom the token names and when it expires.
func readTokenClaims(token string) (tokenClaims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return tokenClaims{}, fmt.Errorf("not a JSON Web Token")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return tokenClaims{}, fmt.Errorf("token payload is not base64url")
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return tokenClaims{}, fmt.Errorf("token payload is not JSON")
	}
	return c, nil
}

// expiry is when the token's exp claim says it expires.
func (c tokenClaims) expiry() time.Time {
	if c.Expiry == 0 {
		return time.Time{}
	}
	return time.Unix(c.Expiry, 0)
}

// existingCredential is what a kubeconfig Secret written earlier holds.
type existingCredential struct {
	target Target
	token  string
	claims tokenClaims
}

// parseExisting reads a kubeconfig Secret's content with the server's rules.
// It fails for anything join would not have written: another user, a client
// certificate, a token that is not the member identity's.
func parseExisting(data []byte) (existingCredential, error) {
	cfg, err := clusters.ParseKubeconfig(data, false)
	if err != nil {
		return existingCredential{}, err
	}
	if cfg.BearerToken == "" {
		return existingCredential{}, fmt.Errorf("it holds no token")
	}
	claims, err := readTokenClaims(cfg.BearerToken)
	if err != nil {
		return existingCredential{}, err
	}
	if claims.Subject != member.Username() {
		return existingCredential{}, fmt.Errorf("its token is not the member identity's (%s)", member.Username())
	}
	return existingCredential{
		target: Target{Server: cfg.Host, CAData: cfg.CAData, TLSServerName: cfg.ServerName},
		token:  cfg.BearerToken,
		claims: claims,
	}, nil
}
