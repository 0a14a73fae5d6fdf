package memberaccess

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The token and key material below must never show up in an error text.
const testToken = "s3cr3t-t0ken-value-0123456789"

type testPKI struct {
	caPEM, certPEM, keyPEM, otherKeyPEM []byte
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	newKey := func() (*ecdsa.PrivateKey, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	caKey, _ := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	clientKey, clientKeyPEM := newKey()
	clientTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "tenant"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTmpl, caTmpl, &clientKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKeyPEM := newKey()
	return testPKI{
		caPEM:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientDER}),
		keyPEM:      clientKeyPEM,
		otherKeyPEM: otherKeyPEM,
	}
}

// baseKubeconfig is a valid token kubeconfig with current context "ctx",
// cluster "c" and user "u".
func (p testPKI) baseKubeconfig() *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://member.example.com:6443", CertificateAuthorityData: p.caPEM}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: testToken}
	kc.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "default"}
	kc.CurrentContext = "ctx"
	return kc
}

func writeKubeconfig(t *testing.T, kc *clientcmdapi.Config) []byte {
	t.Helper()
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseKubeconfigRefusals(t *testing.T) {
	p := newTestPKI(t)
	cases := []struct {
		name   string
		mutate func(kc *clientcmdapi.Config)
		raw    string // used instead of mutate when set
		allow  bool   // AllowInsecureSkipTLSVerify
		reason Reason
		field  string
	}{
		{name: "empty", raw: " \n", reason: ErrKubeconfigInvalid},
		{name: "not yaml", raw: "users: [token: " + testToken, reason: ErrKubeconfigInvalid},
		{name: "not a kubeconfig", raw: "apiVersion: v1\nkind: Pod\nmetadata: {name: " + testToken + "}\n", reason: ErrKubeconfigInvalid},
		{name: "wrong field type", raw: "apiVersion: v1\nkind: Config\nusers: {token: " + testToken + "}\n", reason: ErrKubeconfigInvalid},
		{name: "no current context", mutate: func(kc *clientcmdapi.Config) { kc.CurrentContext = "" }, reason: ErrNoCurrentContext, field: "current-context"},
		{name: "current context undefined", mutate: func(kc *clientcmdapi.Config) { kc.CurrentContext = "other" }, reason: ErrNoCurrentContext, field: "current-context"},
		{name: "cluster undefined", mutate: func(kc *clientcmdapi.Config) { kc.Contexts["ctx"].Cluster = "nope" }, reason: ErrNoCurrentContext, field: `contexts["ctx"].context.cluster`},
		{name: "user undefined", mutate: func(kc *clientcmdapi.Config) { kc.Contexts["ctx"].AuthInfo = "nope" }, reason: ErrNoCurrentContext, field: `contexts["ctx"].context.user`},
		{name: "exec plugin", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		}, reason: ErrExecPlugin, field: `users["u"].user.exec`},
		{name: "exec plugin with a token too", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "aws", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		}, reason: ErrExecPlugin, field: `users["u"].user.exec`},
		{name: "auth provider", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"id-token": testToken}}
		}, reason: ErrAuthProvider, field: `users["u"].user.auth-provider`},
		{name: "token file", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}, reason: ErrFilePath, field: `users["u"].user.tokenFile`},
		{name: "client certificate file", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: "/etc/kubernetes/pki/admin.crt", ClientKeyData: p.keyPEM}
		}, reason: ErrFilePath, field: `users["u"].user.client-certificate`},
		{name: "client key file", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.certPEM, ClientKey: "/etc/kubernetes/pki/admin.key"}
		}, reason: ErrFilePath, field: `users["u"].user.client-key`},
		{name: "certificate authority file", mutate: func(kc *clientcmdapi.Config) { kc.Clusters["c"].CertificateAuthority = "/etc/kubernetes/pki/ca.crt" }, reason: ErrFilePath, field: `clusters["c"].cluster.certificate-authority`},
		{name: "proxy url", mutate: func(kc *clientcmdapi.Config) { kc.Clusters["c"].ProxyURL = "socks5://10.0.0.1:1080" }, reason: ErrProxyURL, field: `clusters["c"].cluster.proxy-url`},
		{name: "username and password", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Username: "admin", Password: testToken}
		}, reason: ErrBasicAuth, field: `users["u"].user.username`},
		{name: "password only", mutate: func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Password = testToken }, reason: ErrBasicAuth, field: `users["u"].user.username`},
		{name: "impersonate user", mutate: func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Impersonate = "system:admin" }, reason: ErrImpersonation, field: `users["u"].user.as`},
		{name: "impersonate uid", mutate: func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].ImpersonateUID = "1234" }, reason: ErrImpersonation, field: `users["u"].user.as-uid`},
		{name: "impersonate groups", mutate: func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].ImpersonateGroups = []string{"system:masters"} }, reason: ErrImpersonation, field: `users["u"].user.as-groups`},
		{name: "impersonate extra", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].ImpersonateUserExtra = map[string][]string{"scopes": {"all"}}
		}, reason: ErrImpersonation, field: `users["u"].user.as-user-extra`},
		{name: "insecure skip tls verify", mutate: func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].InsecureSkipTLSVerify = true
			kc.Clusters["c"].CertificateAuthorityData = nil
		}, reason: ErrInsecureSkipTLSVerify, field: `clusters["c"].cluster.insecure-skip-tls-verify`},
		{name: "insecure skip tls verify with a CA", mutate: func(kc *clientcmdapi.Config) { kc.Clusters["c"].InsecureSkipTLSVerify = true }, reason: ErrInsecureSkipTLSVerify, field: `clusters["c"].cluster.insecure-skip-tls-verify`},
		{name: "no certificate authority", mutate: func(kc *clientcmdapi.Config) { kc.Clusters["c"].CertificateAuthorityData = nil }, reason: ErrNoCertificateAuthority, field: `clusters["c"].cluster.certificate-authority-data`},
		{name: "certificate authority not PEM", mutate: func(kc *clientcmdapi.Config) { kc.Clusters["c"].CertificateAuthorityData = []byte("not a certificate") }, reason: ErrInvalidCertificateData, field: `clusters["c"].cluster.certificate-authority-data`},
		{name: "certificate authority is a key", mutate: func(kc *clientcmdapi.Config) { kc.Clusters["c"].CertificateAuthorityData = p.keyPEM }, reason: ErrInvalidCertificateData, field: `clusters["c"].cluster.certificate-authority-data`},
		{name: "certificate authority corrupt", mutate: func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].CertificateAuthorityData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("garbage")})
		}, reason: ErrInvalidCertificateData, field: `clusters["c"].cluster.certificate-authority-data`},
		{name: "no credentials", mutate: func(kc *clientcmdapi.Config) { kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{} }, reason: ErrNoCredentials, field: `users["u"].user`},
		{name: "certificate without key", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.certPEM}
		}, reason: ErrIncompleteClientCertificate, field: `users["u"].user.client-key-data`},
		{name: "key without certificate", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientKeyData: p.keyPEM, Token: testToken}
		}, reason: ErrIncompleteClientCertificate, field: `users["u"].user.client-certificate-data`},
		{name: "key of another certificate", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.certPEM, ClientKeyData: p.otherKeyPEM}
		}, reason: ErrInvalidCertificateData, field: `users["u"].user.client-key-data`},
		{name: "key not PEM", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.certPEM, ClientKeyData: []byte(testToken)}
		}, reason: ErrInvalidCertificateData, field: `users["u"].user.client-key-data`},
		{name: "client certificate not PEM", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("nope"), ClientKeyData: p.keyPEM}
		}, reason: ErrInvalidCertificateData, field: `users["u"].user.client-certificate-data`},
		{name: "token with a newline", mutate: func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Token = testToken + "\n" }, reason: ErrInvalidToken, field: `users["u"].user.token`},
		{name: "token with a space", mutate: func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Token = "Bearer " + testToken }, reason: ErrInvalidToken, field: `users["u"].user.token`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.raw)
			if tc.raw == "" {
				kc := p.baseKubeconfig()
				tc.mutate(kc)
				data = writeKubeconfig(t, kc)
			}
			cfg, err := ParseKubeconfig(data, tc.allow)
			if err == nil {
				t.Fatalf("accepted (host %q); want rule %s", cfg.Host, tc.reason)
			}
			if !errors.Is(err, tc.reason) {
				t.Fatalf("got %v; want rule %s", err, tc.reason)
			}
			if got := reasonOf(err); got != tc.reason {
				t.Errorf("reasonOf = %q, want %q", got, tc.reason)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T is not an *Error", err)
			}
			if e.Field != tc.field {
				t.Errorf("field %q, want %q", e.Field, tc.field)
			}
			if !strings.Contains(err.Error(), string(tc.reason)) {
				t.Errorf("error text %q does not name the rule", err)
			}
			for _, secret := range []string{testToken, string(p.keyPEM), string(p.otherKeyPEM)} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error text %q quotes secret content", err)
				}
			}
		})
	}
}

func TestParseKubeconfigAccepts(t *testing.T) {
	p := newTestPKI(t)
	cases := []struct {
		name   string
		mutate func(kc *clientcmdapi.Config)
		raw    func() string
		allow  bool
		check  func(t *testing.T, cfg *rest.Config)
	}{
		{name: "token", check: func(t *testing.T, cfg *rest.Config) {
			if cfg.Host != "https://member.example.com:6443" || cfg.BearerToken != testToken || len(cfg.CAData) == 0 ||
				cfg.CertData != nil || cfg.KeyData != nil || cfg.Insecure {
				t.Errorf("host %q token set %v ca %d cert %d key %d insecure %v", cfg.Host, cfg.BearerToken == testToken,
					len(cfg.CAData), len(cfg.CertData), len(cfg.KeyData), cfg.Insecure)
			}
		}},
		{name: "client certificate", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.certPEM, ClientKeyData: p.keyPEM}
		}, check: func(t *testing.T, cfg *rest.Config) {
			if cfg.BearerToken != "" || len(cfg.CertData) == 0 || len(cfg.KeyData) == 0 {
				t.Errorf("token %v cert %d key %d", cfg.BearerToken != "", len(cfg.CertData), len(cfg.KeyData))
			}
		}},
		{name: "token and client certificate", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].ClientCertificateData, kc.AuthInfos["u"].ClientKeyData = p.certPEM, p.keyPEM
		}, check: func(t *testing.T, cfg *rest.Config) {
			if cfg.BearerToken != testToken || len(cfg.CertData) == 0 || len(cfg.KeyData) == 0 {
				t.Errorf("token %v cert %d key %d", cfg.BearerToken != "", len(cfg.CertData), len(cfg.KeyData))
			}
		}},
		{name: "unused entries with plugins and files are ignored", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["other"] = &clientcmdapi.AuthInfo{TokenFile: "/etc/passwd", Exec: &clientcmdapi.ExecConfig{
				Command: "aws", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
			kc.Clusters["other"] = &clientcmdapi.Cluster{Server: "http://10.0.0.1", ProxyURL: "http://proxy", CertificateAuthority: "/etc/ca"}
			kc.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "other"}
		}, check: func(t *testing.T, cfg *rest.Config) {
			if cfg.Host != "https://member.example.com:6443" || cfg.BearerToken != testToken {
				t.Errorf("host %q", cfg.Host)
			}
		}},
		{name: "tls server name", mutate: func(kc *clientcmdapi.Config) { kc.Clusters["c"].TLSServerName = "kubernetes.default.svc" },
			check: func(t *testing.T, cfg *rest.Config) {
				if cfg.ServerName != "kubernetes.default.svc" {
					t.Errorf("server name %q", cfg.ServerName)
				}
			}},
		{name: "disable compression", mutate: func(kc *clientcmdapi.Config) { kc.Clusters["c"].DisableCompression = true },
			check: func(t *testing.T, cfg *rest.Config) {
				if !cfg.DisableCompression {
					t.Error("compression not disabled")
				}
			}},
		{name: "insecure when allowed", allow: true, mutate: func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].InsecureSkipTLSVerify = true
			kc.Clusters["c"].CertificateAuthorityData = nil
		}, check: func(t *testing.T, cfg *rest.Config) {
			if !cfg.Insecure || cfg.CAData != nil {
				t.Errorf("insecure %v ca %d", cfg.Insecure, len(cfg.CAData))
			}
		}},
		{name: "insecure with a CA when allowed drops the CA", allow: true, mutate: func(kc *clientcmdapi.Config) { kc.Clusters["c"].InsecureSkipTLSVerify = true },
			check: func(t *testing.T, cfg *rest.Config) {
				if !cfg.Insecure || cfg.CAData != nil {
					t.Errorf("insecure %v ca %d", cfg.Insecure, len(cfg.CAData))
				}
			}},
		{name: "allowing insecure changes nothing for secure kubeconfigs", allow: true, check: func(t *testing.T, cfg *rest.Config) {
			if cfg.Insecure || len(cfg.CAData) == 0 {
				t.Errorf("insecure %v ca %d", cfg.Insecure, len(cfg.CAData))
			}
		}},
		{name: "json", raw: func() string {
			return `{"apiVersion":"v1","kind":"Config","current-context":"x",
			"clusters":[{"name":"c","cluster":{"server":"https://10.1.2.3:6443","certificate-authority-data":"` + b64(p.caPEM) + `"}}],
			"users":[{"name":"u","user":{"token":"` + testToken + `"}}],
			"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}]}`
		}, check: func(t *testing.T, cfg *rest.Config) {
			if cfg.Host != "https://10.1.2.3:6443" || cfg.BearerToken != testToken {
				t.Errorf("host %q token set %v", cfg.Host, cfg.BearerToken == testToken)
			}
		}},
		{name: "no apiVersion and kind", raw: func() string {
			return "current-context: x\nclusters:\n- name: c\n  cluster:\n    server: https://10.1.2.3\n    certificate-authority-data: " + b64(p.caPEM) +
				"\nusers:\n- name: u\n  user:\n    token: " + testToken + "\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
		}, check: func(t *testing.T, cfg *rest.Config) {
			if cfg.Host != "https://10.1.2.3:443" {
				t.Errorf("host %q", cfg.Host)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var data []byte
			if tc.raw != nil {
				data = []byte(tc.raw())
			} else {
				kc := p.baseKubeconfig()
				if tc.mutate != nil {
					tc.mutate(kc)
				}
				data = writeKubeconfig(t, kc)
			}
			cfg, err := ParseKubeconfig(data, tc.allow)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			tc.check(t, cfg)
			// Nothing from the kubeconfig may make client-go run, read or proxy.
			if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" || cfg.CertFile != "" ||
				cfg.KeyFile != "" || cfg.CAFile != "" || cfg.Proxy != nil || cfg.Username != "" || cfg.Password != "" ||
				cfg.Impersonate.UserName != "" || len(cfg.Impersonate.Groups) > 0 {
				t.Errorf("unsafe field set in %+v", cfg)
			}
			// Only Transport's policy dialer may connect to a member.
			if cfg.Dial != nil {
				t.Errorf("a dialer of its own would bypass the server policy")
			}
			if cfg.UserAgent == "" {
				t.Errorf("no user agent")
			}
			if cfg.Timeout != 0 {
				t.Errorf("Timeout %v would cut watches", cfg.Timeout)
			}
			// The result must make a working transport.
			if _, err := rest.TransportFor(cfg); err != nil {
				t.Errorf("building a transport: %v", err)
			}
		})
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// reasonOf returns the Reason of an error of this package (an *Error
// unwraps to its Reason), or "" for other errors.
func reasonOf(err error) Reason {
	var r Reason
	if errors.As(err, &r) {
		return r
	}
	return ""
}
