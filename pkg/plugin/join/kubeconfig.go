package join

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
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
// (memberaccess.ParseKubeconfig), so what join writes is what the server takes.
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
	if _, err := memberaccess.ParseKubeconfig(data, false); err != nil {
		return nil, fmt.Errorf("the kubeconfig for %s would be refused by the mesh server: %w", cluster, err)
	}
	return data, nil
}

// existingCredential is what a kubeconfig Secret written earlier holds.
type existingCredential struct {
	target Target
	token  string
	// expiry is the exp claim of the token, read without verifying it:
	// only the member cluster can verify a token, and join asks it
	// (verifyToken) before it keeps one.
	expiry time.Time
}

// parseExisting reads a kubeconfig Secret's content with the server's rules.
// It fails for anything join would not have written: a client certificate,
// a token that states no expiry (not one from a TokenRequest).
func parseExisting(data []byte) (existingCredential, error) {
	cfg, err := memberaccess.ParseKubeconfig(data, false)
	if err != nil {
		return existingCredential{}, err
	}
	if cfg.BearerToken == "" {
		return existingCredential{}, fmt.Errorf("it holds no token")
	}
	exp := memberaccess.TokenExpiry(cfg.BearerToken)
	if exp.IsZero() {
		return existingCredential{}, fmt.Errorf("its token states no expiry: not one from a TokenRequest")
	}
	return existingCredential{
		target: Target{Server: cfg.Host, CAData: cfg.CAData, TLSServerName: cfg.ServerName},
		token:  cfg.BearerToken,
		expiry: exp,
	}, nil
}
