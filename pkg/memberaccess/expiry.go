package memberaccess

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// CredentialExpiry returns when the credential of cfg (a configuration
// from ParseKubeconfig) says it stops being valid: the exp claim of a JSON
// Web Token (a ServiceAccount token from the TokenRequest API), or the
// NotAfter of the client certificate; the earlier of the two when both are
// given. It is zero when the credential states no expiry (a static or
// opaque token, a legacy ServiceAccount token without exp).
//
// The token is read, not verified: only the member cluster can verify it,
// and it does on every request. The expiry serves to warn before the
// member cluster starts refusing the token, nothing else.
func CredentialExpiry(cfg *rest.Config) time.Time {
	var out time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (out.IsZero() || t.Before(out)) {
			out = t
		}
	}
	earliest(TokenExpiry(cfg.BearerToken))
	earliest(certificateExpiry(cfg.CertData))
	return out
}

// TokenExpiry returns the time of the exp claim of a JSON Web Token, read
// without verifying the token; zero when token is not a JWT or has no
// usable exp.
func TokenExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	// Base64url without padding (RFC 7515); tolerate padding all the same.
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		// NumericDate: seconds since the epoch, possibly fractional.
		Exp json.Number `json:"exp"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil || claims.Exp == "" {
		return time.Time{}
	}
	exp, err := claims.Exp.Float64()
	// Beyond what time.Time holds in seconds, the claim means "never".
	if err != nil || exp <= 0 || exp > math.MaxInt64/2 {
		return time.Time{}
	}
	sec, frac := math.Modf(exp)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// certificateExpiry is the NotAfter of the first certificate of PEM data,
// the client certificate itself (intermediates follow it).
func certificateExpiry(data []byte) time.Time {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return time.Time{}
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}
	}
	return cert.NotAfter.UTC()
}
