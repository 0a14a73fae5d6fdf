package join

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// testToken is an unsigned JWT with the claims join reads: only the member
// cluster verifies tokens (and says whom they name), join reads when they
// expire.
func testToken(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	payload, err := json.Marshal(map[string]any{"sub": sub, "exp": exp.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc(payload) + "." + enc([]byte("signature"))
}

func TestBuildKubeconfigIsWhatTheServerAccepts(t *testing.T) {
	ca := testCA(t)
	data, err := BuildKubeconfig("north", Target{Server: "https://North.Example.com:6443", CAData: ca, TLSServerName: "api.north"}, "token-abc")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := memberaccess.ParseKubeconfig(data, false)
	if err != nil {
		t.Fatalf("the server refuses what join builds: %v", err)
	}
	if cfg.Host != "https://north.example.com:6443" || cfg.BearerToken != "token-abc" || cfg.ServerName != "api.north" {
		t.Errorf("parsed back as host %q, token %q, server name %q", cfg.Host, cfg.BearerToken, cfg.ServerName)
	}
	for _, forbidden := range []string{"client-certificate", "exec", "auth-provider", "tokenFile", "insecure"} {
		if strings.Contains(string(data), forbidden) {
			t.Errorf("the kubeconfig carries %q", forbidden)
		}
	}
}

func TestBuildKubeconfigRefusals(t *testing.T) {
	ca := testCA(t)
	for name, tt := range map[string]struct {
		target Target
		token  string
	}{
		"http server":   {Target{Server: "http://north:6443", CAData: ca}, "t"},
		"no CA":         {Target{Server: "https://north:6443"}, "t"},
		"token newline": {Target{Server: "https://north:6443", CAData: ca}, "t\nx"},
	} {
		if _, err := BuildKubeconfig("north", tt.target, tt.token); err == nil || !strings.Contains(err.Error(), "refused by the mesh server") {
			t.Errorf("%s: want a refusal by the server's rules, got %v", name, err)
		}
	}
}

func TestTargetFromRefusesInsecure(t *testing.T) {
	if _, err := TargetFrom(&rest.Config{Host: "https://north:6443", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, ""); err == nil {
		t.Errorf("a kubeconfig skipping TLS verification gives no CA; want an error")
	}
	ca := testCA(t)
	tgt, err := TargetFrom(&rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "caller", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, "https://north.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if tgt.Server != "https://north.example.com" || string(tgt.CAData) != string(ca) {
		t.Errorf("target %+v", tgt)
	}
}

func TestJudgeExisting(t *testing.T) {
	ca := testCA(t)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	target := Target{Server: "https://north:6443", CAData: ca}
	kubeconfig := func(tgt Target, token string) []byte {
		data, err := BuildKubeconfig("north", tgt, token)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	valid := testToken(t, member.Username(), now.Add(200*24*time.Hour))
	tests := []struct {
		name    string
		data    []byte
		refresh bool
		reuse   bool
		reason  string
	}{
		{"valid for long", kubeconfig(target, valid), false, true, "valid until"},
		{"same server written differently", kubeconfig(Target{Server: "https://NORTH:6443/", CAData: ca}, valid), false, true, "valid until"},
		{"refresh", kubeconfig(target, valid), true, false, "--refresh"},
		{"no Secret", nil, false, false, "no credential"},
		{"expires within 30 days", kubeconfig(target, testToken(t, member.Username(), now.Add(29*24*time.Hour))), false, false, "within 30 days"},
		{"not a JWT", kubeconfig(target, "static-admin-token"), false, false, "states no expiry"},
		{"another server", kubeconfig(Target{Server: "https://south:6443", CAData: ca}, valid), false, false, "another server"},
		{"another CA", kubeconfig(Target{Server: "https://north:6443", CAData: testCA(t)}, valid), false, false, "another server or CA"},
		{"garbage", []byte("nonsense"), false, false, "not one join wrote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, have := judgeExisting(tt.data, target, now, tt.refresh)
			if v.reuse != tt.reuse || !strings.Contains(v.reason, tt.reason) {
				t.Errorf("verdict %+v, want reuse=%t with %q", v, tt.reuse, tt.reason)
			}
			if v.reuse && have.token != valid {
				t.Errorf("kept token %q, want the Secret's", have.token)
			}
		})
	}
}
