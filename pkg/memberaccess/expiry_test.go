package memberaccess

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// jwt builds an unsigned token around payload: only its claims are read.
func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"k"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("signature"))
}

func TestTokenExpiry(t *testing.T) {
	exp := time.Date(2031, 5, 25, 8, 30, 0, 0, time.UTC) // 1937464200
	for _, tc := range []struct {
		name  string
		token string
		want  time.Time
	}{
		{"ServiceAccount token", jwt(`{"aud":["https://kubernetes.default.svc"],"exp":1937464200,"iat":1905928200,"sub":"system:serviceaccount:kilo-mesh-member:kilo-mesh-member"}`), exp},
		{"fractional NumericDate", jwt(`{"exp":1937464200.5}`), exp.Add(500 * time.Millisecond)},
		{"padded payload", base64.RawURLEncoding.EncodeToString([]byte("{}")) + "." + base64.URLEncoding.EncodeToString([]byte(`{"exp":1937464200}`)) + ".sig", exp},
		{"legacy token without exp", jwt(`{"iss":"kubernetes/serviceaccount","sub":"system:serviceaccount:a:b"}`), time.Time{}},
		{"static token", "0123456789abcdef0123456789abcdef", time.Time{}},
		{"empty", "", time.Time{}},
		{"two parts", "a.b", time.Time{}},
		{"payload not base64url", "a.!!!.c", time.Time{}},
		{"payload not JSON", "a." + base64.RawURLEncoding.EncodeToString([]byte("exp=1")) + ".c", time.Time{}},
		{"exp not a number", jwt(`{"exp":"tomorrow"}`), time.Time{}},
		{"exp negative", jwt(`{"exp":-5}`), time.Time{}},
		{"exp beyond any date", jwt(`{"exp":1e300}`), time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TokenExpiry(tc.token); !got.Equal(tc.want) {
				t.Errorf("TokenExpiry = %v, want %v", got, tc.want)
			}
		})
	}
}

// CredentialExpiry on configurations as ParseKubeconfig returns them.
func TestCredentialExpiry(t *testing.T) {
	p := newTestPKI(t)
	block, _ := pem.Decode(p.certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	// The client certificate expires in an hour; the tokens in 2100 and 2000.
	notAfter := cert.NotAfter.UTC()
	later, sooner := jwt(`{"exp":4102444800}`), jwt(`{"exp":946684800}`)
	for _, tc := range []struct {
		name string
		user *clientcmdapi.AuthInfo
		want time.Time
	}{
		{"token with exp", &clientcmdapi.AuthInfo{Token: later}, time.Unix(4102444800, 0)},
		{"static token", &clientcmdapi.AuthInfo{Token: testToken}, time.Time{}},
		{"client certificate", &clientcmdapi.AuthInfo{ClientCertificateData: p.certPEM, ClientKeyData: p.keyPEM}, notAfter},
		{"certificate and a token expiring later", &clientcmdapi.AuthInfo{Token: later, ClientCertificateData: p.certPEM, ClientKeyData: p.keyPEM}, notAfter},
		{"certificate and an expired token", &clientcmdapi.AuthInfo{Token: sooner, ClientCertificateData: p.certPEM, ClientKeyData: p.keyPEM}, time.Unix(946684800, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := p.baseKubeconfig()
			kc.AuthInfos["u"] = tc.user
			cfg, err := ParseKubeconfig(writeKubeconfig(t, kc), false)
			if err != nil {
				t.Fatal(err)
			}
			if got := CredentialExpiry(cfg); !got.Equal(tc.want) {
				t.Errorf("CredentialExpiry = %v, want %v", got, tc.want)
			}
		})
	}
	if got := CredentialExpiry(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: []byte("not PEM")}}); !got.IsZero() {
		t.Errorf("unparsable certificate: %v", got)
	}
}
