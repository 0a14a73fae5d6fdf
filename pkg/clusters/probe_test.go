package clusters

import (
	"cmp"
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// TestCheckReady: only a probe that got no answer in time counts as timed
// out (health.slowProbe may forgive it); every answer and every other
// failure is as strict as before. The probe tells the member its own
// timeout, not the Peer writes' longer one.
func TestCheckReady(t *testing.T) {
	const probeTimeout = 300 * time.Millisecond
	for _, c := range []struct {
		name       string
		handler    http.HandlerFunc // nil: nothing listens
		remote     bool             // dialled under a policy that refuses loopback
		wantReason memberaccess.Reason
		wantBusy   bool
		ctxTimeout time.Duration // the probe's context; 0: probeTimeout
	}{
		{name: "ready", handler: status(http.StatusOK)},
		{name: "forbidden", handler: status(http.StatusForbidden)},
		{name: "unauthorized", handler: status(http.StatusUnauthorized), wantReason: memberaccess.ErrUnauthorized},
		{name: "redirect", handler: status(http.StatusFound), wantReason: memberaccess.ErrRedirect},
		{name: "not ready, answered late but in time", handler: func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(probeTimeout / 3)
			w.WriteHeader(http.StatusInternalServerError)
		}, wantReason: memberaccess.ErrUnreachable, wantBusy: true},
		{name: "too many requests", handler: status(http.StatusTooManyRequests), wantReason: memberaccess.ErrUnreachable, wantBusy: true},
		{name: "bad request", handler: status(http.StatusBadRequest), wantReason: memberaccess.ErrUnreachable},
		{name: "connection closed", handler: func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, wantReason: memberaccess.ErrUnreachable},
		{name: "refused", wantReason: memberaccess.ErrUnreachable},
		{name: "not allowed by the dial policy", handler: status(http.StatusOK), remote: true, wantReason: memberaccess.ErrServerNotAllowed},
		{name: "no answer in time", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * probeTimeout):
			}
		}, wantReason: memberaccess.ErrUnreachable, wantBusy: true},
		{name: "no answer within the client's own timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * probeTimeout):
			}
		}, ctxTimeout: 10 * probeTimeout, wantReason: memberaccess.ErrUnreachable, wantBusy: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var timeouts []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				timeouts = append(timeouts, r.URL.Query().Get("timeout"))
				mu.Unlock()
				c.handler(w, r)
			}))
			defer srv.Close()
			if c.handler == nil {
				srv.Close()
			}
			id, allowed := localID, []netip.Prefix(nil)
			if c.remote {
				id, allowed = "remote", []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
			}
			cl, err := newCluster(id, &rest.Config{Host: srv.URL}, clusterOptions{clock: clock.RealClock{}, onChange: func(*cluster) {}, probeTimeout: probeTimeout}, c.remote, allowed)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(c.ctxTimeout, probeTimeout))
			defer cancel()
			probeErr, busy := cl.checkReady(ctx)
			var reason memberaccess.Reason
			if probeErr != nil {
				reason = probeErr.Reason
			}
			if reason != c.wantReason || busy != c.wantBusy {
				t.Errorf("reason %q busy %v (%v), want %q %v", reason, busy, probeErr, c.wantReason, c.wantBusy)
			}
			mu.Lock()
			defer mu.Unlock()
			if c.handler != nil && !c.remote && len(timeouts) == 0 {
				t.Error("the probe sent nothing")
			}
			for _, got := range timeouts {
				if got != probeTimeout.String() {
					t.Errorf("the probe told the member a timeout of %q, want %q", got, probeTimeout)
				}
			}
		})
	}
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if code >= 300 && code < 400 {
			w.Header().Set("Location", "http://192.0.2.1/")
		}
		w.WriteHeader(code)
	}
}
