package clusters

import (
	"bytes"
	"net/netip"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// identityPKI is a CA with a client certificate of it, and a token
// kubeconfig (current context "ctx", cluster "c", user "u") that trusts it.
type identityPKI struct {
	ca     *framework.CA
	client *framework.KeyPair
}

const identityToken = "s3cr3t-t0ken-value-0123456789"

func newIdentityPKI(t *testing.T) identityPKI {
	t.Helper()
	ca, err := framework.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue(framework.CertRequest{CommonName: "tenant", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	return identityPKI{ca: ca, client: client}
}

func (p identityPKI) kubeconfig() *clientcmdapi.Config {
	return &clientcmdapi.Config{
		CurrentContext: "ctx",
		Contexts:       map[string]*clientcmdapi.Context{"ctx": {Cluster: "c", AuthInfo: "u", Namespace: "default"}},
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://member.example.com:6443", CertificateAuthorityData: p.ca.CertPEM}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: identityToken}},
	}
}

func (p identityPKI) parse(t *testing.T, kc *clientcmdapi.Config, allowInsecure bool) *rest.Config {
	t.Helper()
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := memberaccess.ParseKubeconfig(data, allowInsecure)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestIdentity(t *testing.T) {
	p := newIdentityPKI(t)
	other := newIdentityPKI(t)
	h, err := newIdentityHasher()
	if err != nil {
		t.Fatal(err)
	}
	id := func(t *testing.T, mutate func(kc *clientcmdapi.Config)) clusterID {
		t.Helper()
		kc := p.kubeconfig()
		if mutate != nil {
			mutate(kc)
		}
		return h.id(p.parse(t, kc, true), "")
	}
	base := id(t, nil)
	if base == localID || len(base) != 64 {
		t.Fatalf("unexpected id %q", base)
	}

	same := map[string]func(kc *clientcmdapi.Config){
		"other names for context, cluster and user": func(kc *clientcmdapi.Config) {
			kc.Clusters["renamed"], kc.AuthInfos["renamed"] = kc.Clusters["c"], kc.AuthInfos["u"]
			delete(kc.Clusters, "c")
			delete(kc.AuthInfos, "u")
			kc.Contexts["renamed"] = &clientcmdapi.Context{Cluster: "renamed", AuthInfo: "renamed"}
			kc.CurrentContext = "renamed"
		},
		"another namespace":            func(kc *clientcmdapi.Config) { kc.Contexts["ctx"].Namespace = "kube-system" },
		"host case and trailing slash": func(kc *clientcmdapi.Config) { kc.Clusters["c"].Server = "https://MEMBER.example.com:6443/" },
		"unused users and clusters":    func(kc *clientcmdapi.Config) { kc.AuthInfos["x"] = &clientcmdapi.AuthInfo{Token: "other"} },
		"PEM with comments and CRLF": func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].CertificateAuthorityData = append([]byte("# our CA\r\n"), bytes.ReplaceAll(p.ca.CertPEM, []byte("\n"), []byte("\r\n"))...)
		},
		"compression setting": func(kc *clientcmdapi.Config) { kc.Clusters["c"].DisableCompression = true },
	}
	for name, mutate := range same {
		t.Run("same/"+name, func(t *testing.T) {
			if got := id(t, mutate); got != base {
				t.Errorf("different identity for the same cluster and credentials")
			}
		})
	}

	different := map[string]func(kc *clientcmdapi.Config){
		"other token":     func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Token = identityToken + "x" },
		"other server":    func(kc *clientcmdapi.Config) { kc.Clusters["c"].Server = "https://member2.example.com:6443" },
		"other port":      func(kc *clientcmdapi.Config) { kc.Clusters["c"].Server = "https://member.example.com:443" },
		"other path":      func(kc *clientcmdapi.Config) { kc.Clusters["c"].Server = "https://member.example.com:6443/k8s" },
		"other CA":        func(kc *clientcmdapi.Config) { kc.Clusters["c"].CertificateAuthorityData = other.ca.CertPEM },
		"tls server name": func(kc *clientcmdapi.Config) { kc.Clusters["c"].TLSServerName = "kubernetes" },
		"insecure":        func(kc *clientcmdapi.Config) { kc.Clusters["c"].InsecureSkipTLSVerify = true },
		"client cert added": func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].ClientCertificateData, kc.AuthInfos["u"].ClientKeyData = p.client.CertPEM, p.client.KeyPEM
		},
		"client cert instead of token": func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.client.CertPEM, ClientKeyData: p.client.KeyPEM}
		},
	}
	seen := map[clusterID]string{base: "base"}
	for name, mutate := range different {
		t.Run("different/"+name, func(t *testing.T) {
			got := id(t, mutate)
			if prev, ok := seen[got]; ok {
				t.Errorf("same identity as %s", prev)
			}
			seen[got] = name
		})
	}

	t.Run("keyed per hasher", func(t *testing.T) {
		h2, err := newIdentityHasher()
		if err != nil {
			t.Fatal(err)
		}
		cfg := p.parse(t, p.kubeconfig(), false)
		if h.id(cfg, "") != base || h2.id(cfg, "") == base {
			t.Error("identity is not stable per hasher or not keyed")
		}
	})

	t.Run("server policy", func(t *testing.T) {
		// A namespace allowed fewer servers never shares a connection
		// dialled under a wider policy; the order of the networks does not matter.
		cfg := p.parse(t, p.kubeconfig(), false)
		narrow := canonicalPolicy(prefixes("203.0.113.0/24"))
		wide := canonicalPolicy(prefixes("203.0.113.0/24", "198.51.100.0/24"))
		if h.id(cfg, narrow) == h.id(cfg, wide) || h.id(cfg, narrow) == base {
			t.Error("the server policy is not part of the identity")
		}
		if wide != canonicalPolicy(prefixes("198.51.100.0/24", "203.0.113.0/24", "203.0.113.0/24")) {
			t.Error("the canonical policy depends on order or repeats")
		}
	})

	t.Run("length prefixed", func(t *testing.T) {
		// Moving bytes between adjacent fields must change the hash.
		a := p.parse(t, p.kubeconfig(), false)
		b := *a
		b.ServerName, b.APIPath = "ab", ""
		c := *a
		c.ServerName, c.APIPath = "b", "a"
		if h.id(&b, "") == h.id(&c, "") {
			t.Error("field boundaries are not part of the hash")
		}
	})
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}
