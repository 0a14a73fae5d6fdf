package servingcert

import (
	"crypto/x509"
	"slices"
	"testing"
	"time"
)

var testPolicy = policy{
	dnsNames:   []string{"kilo-mesh-apiserver.kilo-mesh-system.svc", "kilo-mesh-apiserver"},
	validity:   30 * time.Minute,
	caValidity: 90 * time.Minute,
}

func trustAll(*x509.Certificate) bool  { return true }
func trustNone(*x509.Certificate) bool { return false }

// mustStep runs one step and round-trips the result through the Secret's
// data, as the controller does.
func mustStep(t *testing.T, s state, now time.Time, trusted func(*x509.Certificate) bool) (state, []string) {
	t.Helper()
	next, why, err := testPolicy.step(s, now, trusted)
	if err != nil {
		t.Fatal(err)
	}
	if len(why) == 0 {
		return next, nil
	}
	return readState(next.data()), why
}

func verifies(t *testing.T, s state, now time.Time) {
	t.Helper()
	pool := x509.NewCertPool()
	for _, c := range s.bundle {
		pool.AddCert(c)
	}
	if _, err := s.serving.cert.Verify(x509.VerifyOptions{
		DNSName: testPolicy.dnsNames[0], Roots: pool, CurrentTime: now,
	}); err != nil {
		t.Fatalf("a client trusting the bundle rejects the serving certificate at %s: %v", now, err)
	}
}

func TestFirstStepMakesEverything(t *testing.T) {
	now := time.Now()
	s, why := mustStep(t, readState(nil), now, trustNone)
	if len(why) == 0 || s.ca == nil || s.serving == nil {
		t.Fatalf("an empty Secret got %v", why)
	}
	if len(s.bundle) != 1 || !s.bundle[0].Equal(s.ca.cert) {
		t.Errorf("bundle holds %d certificates, want the CA only", len(s.bundle))
	}
	if !slices.Equal(s.serving.cert.DNSNames, testPolicy.dnsNames) {
		t.Errorf("names %v, want %v", s.serving.cert.DNSNames, testPolicy.dnsNames)
	}
	verifies(t, s, now)
	if _, why := mustStep(t, s, now.Add(time.Minute), trustAll); why != nil {
		t.Errorf("a fresh state changed again: %v", why)
	}
}

// TestRotation runs the controller's loop minute by minute for more than
// two CA lifetimes. Every minute the aggregator (which trusts what the
// APIService's caBundle held before the step) accepts the certificate being
// served; a new CA is served only after the APIService trusts it; an old
// CA leaves the bundle when it expires, not before.
func TestRotation(t *testing.T) {
	start := time.Now().Truncate(time.Second)
	s, _ := mustStep(t, readState(nil), start, trustNone)
	apiBundle := s.bundle
	served := s.serving
	renewals, rotations := 0, 0
	for m := 1; m <= 200; m++ {
		now := start.Add(time.Duration(m) * time.Minute)
		// A sync: step, serve, put the bundle into the APIService; again
		// while something changed (the controller requeues).
		for range 3 {
			trusted := func(c *x509.Certificate) bool { return containsCert(apiBundle, c) }
			next, why := mustStep(t, s, now, trusted)
			if why == nil {
				break
			}
			if !next.ca.cert.Equal(s.ca.cert) {
				rotations++
				if len(next.bundle) != 2 || !next.bundle[1].Equal(s.ca.cert) {
					t.Fatalf("at %dm a new CA came without the old one in the bundle", m)
				}
			}
			if !next.serving.cert.Equal(s.serving.cert) {
				renewals++
				if !containsCert(apiBundle, next.ca.cert) && usable(s.serving, apiBundle, now) {
					t.Fatalf("at %dm a certificate of a CA the APIService does not trust replaced a working one", m)
				}
			}
			for _, old := range s.bundle {
				if !containsCert(next.bundle, old) && now.Before(old.NotAfter) {
					t.Fatalf("at %dm a CA left the bundle %s before it expired", m, old.NotAfter.Sub(now))
				}
			}
			s, served = next, next.serving
			// The aggregator still has the old bundle when the new
			// certificate is first served.
			verifies(t, state{bundle: apiBundle, serving: served}, now)
			apiBundle = s.bundle
		}
		verifies(t, state{bundle: apiBundle, serving: served}, now)
		if got := served.cert.NotAfter.Sub(now); got < testPolicy.validity/3 {
			t.Fatalf("at %dm the served certificate has only %s left", m, got)
		}
	}
	// A CA lives 90m and is replaced when 30m are left: at 61m, 121m, 181m.
	if rotations != 3 {
		t.Errorf("%d CA rotations in 200m, want 3", rotations)
	}
	if renewals < 9 {
		t.Errorf("%d serving certificates in 200m, want at least one every 20m", renewals)
	}
}

func TestServingCertificateNeverOutlivesItsCA(t *testing.T) {
	now := time.Now()
	ca, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.issueServing(testPolicy.dnsNames, now, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if serving.cert.NotAfter.After(ca.cert.NotAfter) {
		t.Errorf("serving certificate valid until %s, its CA only until %s", serving.cert.NotAfter, ca.cert.NotAfter)
	}
}

// TestDamagedSecret: a CA key that no longer parses costs a new CA, but the
// certificate in use keeps working through the old bundle until the new CA
// is trusted.
func TestDamagedSecret(t *testing.T) {
	now := time.Now()
	s, _ := mustStep(t, readState(nil), now, trustAll)
	data := s.data()
	data[CAKeyKey] = []byte("garbage")
	damaged := readState(data)
	if damaged.ca != nil {
		t.Fatal("a CA without its key was read as usable")
	}
	next, why := mustStep(t, damaged, now, trustNone)
	if next.ca == nil || next.ca.cert.Equal(s.ca.cert) || !next.serving.cert.Equal(s.serving.cert) || len(next.bundle) != 2 {
		t.Fatalf("damaged CA key: %v", why)
	}
	verifies(t, next, now)
}

func TestNamesChanged(t *testing.T) {
	now := time.Now()
	s, _ := mustStep(t, readState(nil), now, trustAll)
	p := testPolicy
	p.dnsNames = []string{"other.kilo-mesh-system.svc"}
	next, why, err := p.step(s, now, trustAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(why) != 1 || !slices.Equal(next.serving.cert.DNSNames, p.dnsNames) {
		t.Errorf("after a rename: %v, names %v", why, next.serving.cert.DNSNames)
	}
}

func TestNextCheck(t *testing.T) {
	p := testPolicy
	p.validity = 45 * time.Minute
	start := time.Now()
	s, _, err := p.step(readState(nil), start, trustAll)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.nextCheck(s), s.serving.cert.NotAfter.Add(-15*time.Minute); !got.Equal(want) {
		t.Errorf("next check %s, want the serving renewal at %s", got, want)
	}
	// At 61m a new CA comes, and a certificate of it (renewal at 91m); the
	// old CA expires at 90m, which is then the next check.
	if s, _, err = p.step(s, start.Add(61*time.Minute), trustAll); err != nil {
		t.Fatal(err)
	}
	if len(s.bundle) != 2 {
		t.Fatalf("bundle of %d CAs at 61m, want 2", len(s.bundle))
	}
	if got, want := p.nextCheck(s), s.bundle[1].NotAfter; !got.Equal(want) {
		t.Errorf("next check %s, want the old CA's expiry %s", got, want)
	}
}
