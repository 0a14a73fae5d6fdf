package memberaccess

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestServerIdentity is the one test of the server URL rules: each server
// is written into an otherwise valid kubeconfig, and ServerIdentity and
// ParseKubeconfig must agree on it, the identity being the Host of the
// client configuration, or both refusing it with the same rule and field.
func TestServerIdentity(t *testing.T) {
	p := newTestPKI(t)
	const serverField = `clusters["c"].cluster.server`
	cases := []struct {
		name, server string
		mutate       func(*clientcmdapi.Config) // applied after server is set
		raw          string                     // the kubeconfig, instead of the base one
		want         string                     // "" when refused
		reason       Reason
		field        string // of the refusal
		// parseReason is ParseKubeconfig's refusal of a kubeconfig that
		// has a ServerIdentity all the same.
		parseReason Reason
	}{
		{name: "explicit port", server: "https://member.example.com:6443", want: "https://member.example.com:6443"},
		{name: "default port", server: "https://member.example.com", want: "https://member.example.com:443"},
		{name: "case of scheme and host", server: "HTTPS://Member.Example.COM", want: "https://member.example.com:443"},
		{name: "trailing slash", server: "https://member.example.com:443/", want: "https://member.example.com:443"},
		{name: "leading zeros in the port", server: "https://member.example.com:06443", want: "https://member.example.com:6443"},
		{name: "path prefix", server: "https://lb.example.com/cluster-a/", want: "https://lb.example.com:443/cluster-a"},
		{name: "path cleaned as client-go joins it", server: "https://lb.example.com//x/../cluster-a//", want: "https://lb.example.com:443/cluster-a"},
		{name: "path decoded as client-go sends it", server: "https://lb.example.com/%63luster-a", want: "https://lb.example.com:443/cluster-a"},
		{name: "path case kept", server: "https://lb.example.com/Cluster-A", want: "https://lb.example.com:443/Cluster-A"},
		{name: "IPv4", server: "https://10.0.0.1:6443", want: "https://10.0.0.1:6443"},
		{name: "IPv6", server: "https://[fd00::1]:6443", want: "https://[fd00::1]:6443"},
		{name: "IPv6 written long, upper-case, default port", server: "https://[FD00:0:0::1]", want: "https://[fd00::1]:443"},
		{name: "IPv4-mapped IPv6", server: "https://[::ffff:10.0.0.1]:6443", want: "https://10.0.0.1:6443"},

		{name: "empty", server: "", reason: ErrServerURL, field: serverField},
		{name: "http", server: "http://member.example.com:8080", reason: ErrNotHTTPS, field: serverField},
		{name: "no scheme", server: "member.example.com:6443", reason: ErrNotHTTPS, field: serverField},
		{name: "unix socket", server: "unix:///var/run/kube.sock", reason: ErrNotHTTPS, field: serverField},
		{name: "malformed", server: "https://[::1", reason: ErrServerURL, field: serverField},
		{name: "no host", server: "https:///api", reason: ErrServerURL, field: serverField},
		{name: "port out of range", server: "https://member.example.com:65536", reason: ErrServerURL, field: serverField},
		{name: "port zero", server: "https://member.example.com:0", reason: ErrServerURL, field: serverField},
		{name: "query", server: "https://member.example.com?x=1", reason: ErrServerURL, field: serverField},
		{name: "fragment", server: "https://member.example.com#x", reason: ErrServerURL, field: serverField},
		// A path into an API server's own resources is not a prefix: its
		// proxies could answer for the host with the host's certificate.
		{name: "service proxy", server: "https://host.example.com/api/v1/namespaces/t/services/https:fake:443/proxy", reason: ErrServerPath, field: serverField},
		{name: "service proxy, name without a port", server: "https://host.example.com/api/v1/namespaces/t/services/fake/proxy", reason: ErrServerPath, field: serverField},
		{name: "pod proxy", server: "https://host.example.com/api/v1/namespaces/t/pods/p/proxy/", reason: ErrServerPath, field: serverField},
		{name: "node proxy", server: "https://host.example.com/api/v1/nodes/n/proxy", reason: ErrServerPath, field: serverField},
		{name: "an aggregated API", server: "https://host.example.com/apis/mesh.kilo.squat.ai/v1alpha1", reason: ErrServerPath, field: serverField},
		{name: "api after a prefix", server: "https://lb.example.com/k8s/clusters/c-1/api/v1/namespaces/t/services/s/proxy", reason: ErrServerPath, field: serverField},
		{name: "reserved segment in another case", server: "https://host.example.com/API/v1", reason: ErrServerPath, field: serverField},
		{name: "reserved segment escaped", server: "https://host.example.com/%61pis/x", reason: ErrServerPath, field: serverField},
		{name: "reserved segment reached by dot segments", server: "https://host.example.com/x/../api/v1", reason: ErrServerPath, field: serverField},
		{name: "a colon in the path", server: "https://host.example.com/services/https:fake:443", reason: ErrServerPath, field: serverField},
		{name: "an escaped slash", server: "https://host.example.com/a%2Fproxy", reason: ErrServerPath, field: serverField},
		{name: "a space", server: "https://host.example.com/a%20b", reason: ErrServerPath, field: serverField},
		{name: "a reverse proxy's prefix", server: "https://lb.example.com/k8s/clusters/c-1", want: "https://lb.example.com:443/k8s/clusters/c-1"},
		{name: "password", server: "https://admin:" + testToken + "@member.example.com", reason: ErrBasicAuth, field: serverField},

		{name: "only the current context counts", server: "https://member.example.com:6443", mutate: func(kc *clientcmdapi.Config) {
			kc.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other.example.com"}
			kc.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "u"}
		}, want: "https://member.example.com:6443"},
		{name: "credentials do not count", server: "https://member.example.com:6443", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
		}, want: "https://member.example.com:6443", parseReason: ErrNoCredentials},
		{name: "no current context", server: "https://member.example.com:6443", mutate: func(kc *clientcmdapi.Config) { kc.CurrentContext = "" },
			reason: ErrNoCurrentContext, field: "current-context"},
		{name: "cluster undefined", server: "https://member.example.com:6443", mutate: func(kc *clientcmdapi.Config) { kc.Contexts["ctx"].Cluster = "nope" },
			reason: ErrNoCurrentContext, field: `contexts["ctx"].context.cluster`},
		{name: "not a kubeconfig", raw: "users: [token: " + testToken, reason: ErrKubeconfigInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.raw)
			if tc.raw == "" {
				kc := p.baseKubeconfig()
				kc.Clusters["c"].Server = tc.server
				if tc.mutate != nil {
					tc.mutate(kc)
				}
				data = writeKubeconfig(t, kc)
			}
			id, err := ServerIdentity(data)
			cfg, parseErr := ParseKubeconfig(data, false)
			if tc.want != "" {
				if err != nil || id != tc.want {
					t.Errorf("identity %q (%v), want %q", id, err, tc.want)
				}
				switch {
				case tc.parseReason != "":
					if reasonOf(parseErr) != tc.parseReason {
						t.Errorf("ParseKubeconfig: %v, want rule %s", parseErr, tc.parseReason)
					}
				case parseErr != nil || cfg.Host != tc.want:
					t.Errorf("ParseKubeconfig: Host %q (%v), want %q", hostOf(cfg), parseErr, tc.want)
				}
				return
			}
			for what, err := range map[string]error{"ServerIdentity": err, "ParseKubeconfig": parseErr} {
				var e *Error
				if !errors.As(err, &e) || e.Reason != tc.reason || e.Field != tc.field {
					t.Errorf("%s: got %v; want rule %s at %s", what, err, tc.reason, tc.field)
					continue
				}
				if strings.Contains(e.Error(), testToken) {
					t.Errorf("%s: error text %q quotes the password", what, e)
				}
			}
		})
	}
}

func hostOf(cfg *rest.Config) string {
	if cfg == nil {
		return ""
	}
	return cfg.Host
}
