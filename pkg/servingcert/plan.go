package servingcert

import (
	"crypto/x509"
	"fmt"
	"slices"
	"time"
)

// Keys of the Secret. ca-bundle.crt is what the APIService must trust: the
// current CA first, then older CAs until they expire.
const (
	CACertKey   = "ca.crt"
	CAKeyKey    = "ca.key"
	CABundleKey = "ca-bundle.crt"
	TLSCertKey  = "tls.crt"
	TLSKeyKey   = "tls.key"
)

// state is what the Secret holds, parsed. Pieces that are missing or do not
// parse are nil and get replaced.
type state struct {
	ca      *keyPair
	bundle  []*x509.Certificate
	serving *keyPair
}

func readState(data map[string][]byte) state {
	var s state
	if ca, err := parseKeyPair(data[CACertKey], data[CAKeyKey]); err == nil && ca.cert.IsCA {
		s.ca = ca
	}
	s.bundle = parseBundle(data[CABundleKey])
	if serving, err := parseKeyPair(data[TLSCertKey], data[TLSKeyKey]); err == nil {
		s.serving = serving
	}
	return s
}

// data is the Secret's content for s.
func (s state) data() map[string][]byte {
	return map[string][]byte{
		CACertKey:   s.ca.certPEM,
		CAKeyKey:    s.ca.keyPEM,
		CABundleKey: encodeBundle(s.bundle),
		TLSCertKey:  s.serving.certPEM,
		TLSKeyKey:   s.serving.keyPEM,
	}
}

// policy decides when certificates are made.
type policy struct {
	dnsNames   []string
	validity   time.Duration
	caValidity time.Duration
}

// step moves s one step towards a CA that is not about to expire, a bundle
// that trusts every CA a replica's certificate may still chain to, and a
// fresh serving certificate from the current CA. trusted tells whether the
// APIService already trusts a CA: a working certificate is replaced by one
// from a new CA only after that, so the aggregator never meets a
// certificate it cannot verify. It returns the new state and why it changed
// (nothing: no change).
func (p policy) step(s state, now time.Time, trusted func(*x509.Certificate) bool) (state, []string, error) {
	var why []string
	next := state{ca: s.ca, serving: s.serving}
	if reason := p.caDue(s.ca, now); reason != "" {
		ca, err := newCA(now, p.caValidity)
		if err != nil {
			return s, nil, fmt.Errorf("creating a CA: %w", err)
		}
		next.ca = ca
		why = append(why, "new CA: "+reason)
	}
	next.bundle = bundleFor(next.ca, s, now)
	if !slices.EqualFunc(next.bundle, s.bundle, (*x509.Certificate).Equal) {
		why = append(why, "CA bundle updated")
	}
	if reason := p.servingDue(s.serving, next.ca, now); reason != "" {
		if usable(s.serving, next.bundle, now) && !trusted(next.ca.cert) {
			// The next sync, after the APIService trusts the CA, issues it.
			return next, why, nil
		}
		serving, err := next.ca.issueServing(p.dnsNames, now, p.validity)
		if err != nil {
			return s, nil, fmt.Errorf("issuing the serving certificate: %w", err)
		}
		next.serving = serving
		why = append(why, "new serving certificate: "+reason)
	}
	return next, why, nil
}

func (p policy) caDue(ca *keyPair, now time.Time) string {
	switch {
	case ca == nil:
		return "none yet"
	case !now.Before(ca.cert.NotAfter):
		return "the CA expired"
	case ca.cert.NotAfter.Sub(now) < p.caValidity/3:
		return "the CA expires soon"
	}
	return ""
}

func (p policy) servingDue(serving, ca *keyPair, now time.Time) string {
	switch {
	case serving == nil:
		return "none yet"
	case !slices.Equal(serving.cert.DNSNames, p.dnsNames):
		return "the names changed"
	case !signedBy(serving.cert, ca.cert):
		return "signed by an older CA"
	case !now.Before(serving.cert.NotAfter):
		return "expired"
	case serving.cert.NotAfter.Sub(now) < p.validity/3:
		return "expires soon"
	}
	return ""
}

// bundleFor is ca followed by every other CA of s (its bundle, its CA)
// that has not expired: a replica may still serve a certificate of theirs.
func bundleFor(ca *keyPair, s state, now time.Time) []*x509.Certificate {
	bundle := []*x509.Certificate{ca.cert}
	older := slices.Clone(s.bundle)
	if s.ca != nil {
		older = append(older, s.ca.cert)
	}
	for _, c := range older {
		if c.IsCA && now.Before(c.NotAfter) && !containsCert(bundle, c) {
			bundle = append(bundle, c)
		}
	}
	return bundle
}

// usable tells whether serving works now for a client that trusts bundle.
func usable(serving *keyPair, bundle []*x509.Certificate, now time.Time) bool {
	if serving == nil || now.Before(serving.cert.NotBefore) || !now.Before(serving.cert.NotAfter) {
		return false
	}
	return slices.ContainsFunc(bundle, func(ca *x509.Certificate) bool { return signedBy(serving.cert, ca) })
}

// nextCheck is when s next needs a step: a certificate to renew, or an old
// CA to drop from the bundle.
func (p policy) nextCheck(s state) time.Time {
	t := s.serving.cert.NotAfter.Add(-p.validity / 3)
	if ca := s.ca.cert.NotAfter.Add(-p.caValidity / 3); ca.Before(t) {
		t = ca
	}
	for _, c := range s.bundle[1:] {
		if c.NotAfter.Before(t) {
			t = c.NotAfter
		}
	}
	return t
}
