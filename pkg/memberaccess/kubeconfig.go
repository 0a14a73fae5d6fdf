package memberaccess

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"
	"unicode"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// Client settings of member-cluster clients. No overall request timeout is
// set on the returned rest.Config: it would cut the informers' long-running
// watches. Requests that must end carry their own deadline (probe, Peer
// writes); connection setup is bounded here. Rate limits are the caller's
// (the member caches', clusters.Config.QPS).
const (
	dialTimeout = 10 * time.Second
	// UserAgent is what this server calls itself on member clusters and,
	// by the member caches, on the local one.
	UserAgent = "kilo-mesh-apiserver/clusters"
)

// ParseKubeconfig validates a tenant-supplied kubeconfig and returns a client
// configuration for its current context. Only self-contained kubeconfigs are
// accepted: an https server, certificate-authority-data, and a token or
// client-certificate-data with client-key-data. Exec and auth-provider
// plugins, file paths, proxy-url, basic auth, impersonation and (unless
// allowInsecure) insecure-skip-tls-verify are refused. Contexts, clusters and
// users other than the current context's are ignored, never used.
//
// A refusal is an *Error whose Reason names the rule and whose Field is the
// path in the kubeconfig. Error texts never quote the kubeconfig.
//
// The server URL of the result is its ServerIdentity and its PEM data are
// re-encoded, so that equal credentials written differently yield equal
// configurations.
func ParseKubeconfig(data []byte, allowInsecure bool) (*rest.Config, error) {
	kc, err := loadKubeconfig(data)
	if err != nil {
		return nil, err
	}
	kctx, cluster, err := currentCluster(kc)
	if err != nil {
		return nil, err
	}
	user := kc.AuthInfos[kctx.AuthInfo]
	if user == nil {
		return nil, newError(ErrNoCurrentContext, fmt.Sprintf("contexts[%q].context.user", kc.CurrentContext),
			fmt.Sprintf("user %q is not defined", kctx.AuthInfo))
	}
	clusterField := fmt.Sprintf("clusters[%q].cluster", kctx.Cluster)
	userField := fmt.Sprintf("users[%q].user", kctx.AuthInfo)

	// Checks that would make the server run, read or proxy something come
	// first, so that the most serious problem is the one reported.
	if err := checkUser(user, userField); err != nil {
		return nil, err
	}
	if err := checkCluster(cluster, clusterField, allowInsecure); err != nil {
		return nil, err
	}
	host, err := normalizeServer(cluster.Server, clusterField+".server")
	if err != nil {
		return nil, err
	}

	cfg := &rest.Config{
		Host:               host,
		DisableCompression: cluster.DisableCompression,
		UserAgent:          UserAgent,
	}
	cfg.ServerName = cluster.TLSServerName
	if cluster.InsecureSkipTLSVerify {
		// client-go refuses a CA together with insecure; the CA would not be
		// checked anyway.
		cfg.Insecure = true
	} else {
		if cfg.CAData, err = normalizeCertificates(cluster.CertificateAuthorityData); err != nil {
			return nil, newError(ErrInvalidCertificateData, clusterField+".certificate-authority-data", err.Error())
		}
	}
	if err := setCredentials(cfg, user, userField); err != nil {
		return nil, err
	}
	return cfg, nil
}

// loadKubeconfig decodes a kubeconfig. The decoder's own errors may quote
// the input (and so a token): only say which stage failed.
func loadKubeconfig(data []byte) (*clientcmdapi.Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, newError(ErrKubeconfigInvalid, "", "kubeconfig is empty")
	}
	if _, err := yaml.YAMLToJSON(data); err != nil {
		return nil, newError(ErrKubeconfigInvalid, "", "kubeconfig is not valid YAML or JSON")
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, newError(ErrKubeconfigInvalid, "", "not a kubeconfig (apiVersion v1, kind Config)")
	}
	return kc, nil
}

// currentCluster returns the current context and the cluster it names.
func currentCluster(kc *clientcmdapi.Config) (*clientcmdapi.Context, *clientcmdapi.Cluster, error) {
	if kc.CurrentContext == "" {
		return nil, nil, newError(ErrNoCurrentContext, "current-context", "current-context is not set")
	}
	kctx := kc.Contexts[kc.CurrentContext]
	if kctx == nil {
		return nil, nil, newError(ErrNoCurrentContext, "current-context", fmt.Sprintf("context %q is not defined", kc.CurrentContext))
	}
	cluster := kc.Clusters[kctx.Cluster]
	if cluster == nil {
		return nil, nil, newError(ErrNoCurrentContext, fmt.Sprintf("contexts[%q].context.cluster", kc.CurrentContext),
			fmt.Sprintf("cluster %q is not defined", kctx.Cluster))
	}
	return kctx, cluster, nil
}

func checkUser(u *clientcmdapi.AuthInfo, field string) error {
	switch {
	case u.Exec != nil:
		return newError(ErrExecPlugin, field+".exec", "exec credential plugins are not allowed")
	case u.AuthProvider != nil:
		return newError(ErrAuthProvider, field+".auth-provider", "auth-provider plugins are not allowed")
	case u.TokenFile != "":
		return newError(ErrFilePath, field+".tokenFile", "file paths are not allowed; put the token in token")
	case u.ClientCertificate != "":
		return newError(ErrFilePath, field+".client-certificate", "file paths are not allowed; use client-certificate-data")
	case u.ClientKey != "":
		return newError(ErrFilePath, field+".client-key", "file paths are not allowed; use client-key-data")
	case u.Username != "" || u.Password != "":
		return newError(ErrBasicAuth, field+".username", "basic authentication is not allowed")
	case u.Impersonate != "":
		return newError(ErrImpersonation, field+".as", "impersonation is not allowed")
	case u.ImpersonateUID != "":
		return newError(ErrImpersonation, field+".as-uid", "impersonation is not allowed")
	case len(u.ImpersonateGroups) > 0:
		return newError(ErrImpersonation, field+".as-groups", "impersonation is not allowed")
	case len(u.ImpersonateUserExtra) > 0:
		return newError(ErrImpersonation, field+".as-user-extra", "impersonation is not allowed")
	}
	return nil
}

func checkCluster(c *clientcmdapi.Cluster, field string, allowInsecure bool) error {
	switch {
	case c.CertificateAuthority != "":
		return newError(ErrFilePath, field+".certificate-authority", "file paths are not allowed; use certificate-authority-data")
	case c.ProxyURL != "":
		return newError(ErrProxyURL, field+".proxy-url", "proxies are not allowed")
	case c.InsecureSkipTLSVerify && !allowInsecure:
		return newError(ErrInsecureSkipTLSVerify, field+".insecure-skip-tls-verify", "skipping TLS verification is not allowed on this server")
	case !c.InsecureSkipTLSVerify && len(c.CertificateAuthorityData) == 0:
		return newError(ErrNoCertificateAuthority, field+".certificate-authority-data", "certificate-authority-data is required")
	}
	return nil
}

func setCredentials(cfg *rest.Config, u *clientcmdapi.AuthInfo, field string) error {
	hasCert, hasKey := len(u.ClientCertificateData) > 0, len(u.ClientKeyData) > 0
	switch {
	case hasCert && !hasKey:
		return newError(ErrIncompleteClientCertificate, field+".client-key-data", "client-certificate-data needs client-key-data")
	case hasKey && !hasCert:
		return newError(ErrIncompleteClientCertificate, field+".client-certificate-data", "client-key-data needs client-certificate-data")
	case !hasCert && u.Token == "":
		return newError(ErrNoCredentials, field, "a token or client-certificate-data with client-key-data is required")
	}
	if u.Token != "" {
		if strings.IndexFunc(u.Token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return newError(ErrInvalidToken, field+".token", "token contains whitespace or control characters")
		}
		cfg.BearerToken = u.Token
	}
	if hasCert {
		cert, err := normalizeCertificates(u.ClientCertificateData)
		if err != nil {
			return newError(ErrInvalidCertificateData, field+".client-certificate-data", err.Error())
		}
		key, err := normalizeKey(u.ClientKeyData)
		if err != nil {
			return newError(ErrInvalidCertificateData, field+".client-key-data", err.Error())
		}
		// The tls error texts name the problem without quoting key material.
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			return newError(ErrInvalidCertificateData, field+".client-key-data", "key does not match the client certificate: "+err.Error())
		}
		cfg.CertData, cfg.KeyData = cert, key
	}
	return nil
}

// normalizeCertificates re-encodes the PEM certificates of data, so that
// comments, headers and line breaks do not change a cluster's identity.
func normalizeCertificates(data []byte) ([]byte, error) {
	var out []byte
	for remaining := data; ; {
		var block *pem.Block
		block, remaining = pem.Decode(remaining)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block of type %q where a CERTIFICATE was expected", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return nil, fmt.Errorf("certificate does not parse")
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: block.Bytes})...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM certificate found")
	}
	return out, nil
}

// normalizeKey re-encodes the first PEM block of a private key. Whether it
// is a usable key is left to tls.X509KeyPair.
func normalizeKey(data []byte) ([]byte, error) {
	block, _ := pem.Decode(data)
	if block == nil || !strings.HasSuffix(block.Type, "PRIVATE KEY") {
		return nil, fmt.Errorf("no PEM private key found")
	}
	return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: block.Bytes}), nil
}
