//go:build integration

package clusters

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// slowMember is a TLS proxy on loopback in front of a member's
// kube-apiserver that can answer /readyz late while everything else flows,
// or hold everything (the watches' streams included), as an overloaded or
// a lost server would.
type slowMember struct {
	srv          *httptest.Server
	readyzDelay  atomic.Int64  // nanoseconds; 0: /readyz is passed on at once
	readyzSeen   atomic.Int64  // /readyz requests received, frozen or not
	readyzGaveUp atomic.Int64  // delayed /readyz requests the client gave up on
	answered     chan struct{} // a /readyz was answered (buffered, lossy)

	mu     sync.Mutex
	frozen chan struct{} // closed when thawed; nil while not frozen
}

func startSlowMember(t *testing.T, upstream *rest.Config) *slowMember {
	t.Helper()
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	proxy.FlushInterval = -1
	s := &slowMember{answered: make(chan struct{}, 1)}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			s.readyzSeen.Add(1)
		}
		if !s.pass(r.Context()) {
			return
		}
		if r.URL.Path == "/readyz" {
			if d := time.Duration(s.readyzDelay.Load()); d > 0 {
				select {
				case <-r.Context().Done():
					s.readyzGaveUp.Add(1)
					return
				case <-time.After(d):
				}
			}
			defer func() {
				select {
				case s.answered <- struct{}{}:
				default:
				}
			}()
		}
		proxy.ServeHTTP(gatedWriter{ResponseWriter: w, s: s, ctx: r.Context()}, r)
	}))
	t.Cleanup(func() {
		s.freeze(false)
		s.srv.Close()
	})
	return s
}

// kubeconfig is the kubeconfig of user on cluster, pointed at the proxy.
func (s *slowMember) kubeconfig(t *testing.T, h *harness, cluster int, user string) []byte {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	return h.mutatedKubeconfig(t, cluster, user, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
		c.Server, c.CertificateAuthority, c.CertificateAuthorityData = s.srv.URL, "", ca
	})
}

// freeze holds every request and every write of a response already
// flowing (on) until thawed (off).
func (s *slowMember) freeze(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case on && s.frozen == nil:
		s.frozen = make(chan struct{})
	case !on && s.frozen != nil:
		close(s.frozen)
		s.frozen = nil
	}
}

// pass waits while the proxy is frozen; false when ctx ended first.
func (s *slowMember) pass(ctx context.Context) bool {
	s.mu.Lock()
	frozen := s.frozen
	s.mu.Unlock()
	if frozen == nil {
		return true
	}
	select {
	case <-frozen:
		return true
	case <-ctx.Done():
		return false
	}
}

// gatedWriter holds the writes of a response while the proxy is frozen.
type gatedWriter struct {
	http.ResponseWriter
	s   *slowMember
	ctx context.Context
}

func (g gatedWriter) Write(b []byte) (int, error) {
	if !g.s.pass(g.ctx) {
		return 0, g.ctx.Err()
	}
	return g.ResponseWriter.Write(b)
}

func (g gatedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// testSlowProbe: a member whose /readyz answers later than the probe's
// timeout while its watches keep delivering events stays reachable for
// maxSlowProbes probes in a row, then is unreachable after all; a member
// that answers nothing at all is unreachable at the first probe, as before.
func (h *harness) testSlowProbe(t *testing.T) {
	const interval, timeout = 2 * time.Second, time.Second
	slow := startSlowMember(t, h.env.RESTConfig(member1, framework.UserAdmin))
	ns := h.namespace(t)
	h.putSecret(t, ns, "busy", slow.kubeconfig(t, h, member1, framework.UserAdmin))
	mesh := newMesh(ns, "busy", localEntry("host"), remoteEntry("busy", "busy"))
	m, _ := h.startManager(t, func(c *Config) { c.ProbeInterval, c.ProbeTimeout = interval, timeout })
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "usable through the proxy", allUsable(m, mesh))

	// Kilo's check-ins stand-in: one Node patched every 100 ms.
	node := h.createNode(t, member1, "busy")
	nodes := h.env.Client(member1, framework.UserAdmin).CoreV1().Nodes()
	stop := make(chan struct{})
	var patched atomic.Int64
	var patchErr atomic.Value
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"kilo.squat.ai/last-seen":%q}}}`, strconv.Itoa(n))
			if _, err := nodes.Patch(h.ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				patchErr.Store(err.Error())
				continue
			}
			patched.Add(1)
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
	}()

	// /readyz answers after three times the probe's timeout; the watches flow.
	slow.readyzDelay.Store(int64(3 * timeout))
	start := time.Now()
	gaveUp := h.firstUnreachable(t, m, mesh, "busy", 8*interval, slow.readyzGaveUp.Load)
	slow.readyzDelay.Store(0)
	t.Logf("with /readyz late and %d Node patches flowing, unreachable after %s, when %d probes had timed out: %s",
		patched.Load(), time.Since(start).Round(time.Millisecond), gaveUp, m.Snapshot(mesh)["busy"].LastError)
	if gaveUp < maxSlowProbes {
		t.Errorf("unreachable when %d probes had timed out, want not before %d (the watches delivered: %d Node patches; last patch error %v)",
			gaveUp, maxSlowProbes, patched.Load(), patchErr.Load())
	}
	framework.EventuallyT(t, 4*interval, "usable again once /readyz answers", allUsable(m, mesh))

	// Everything hangs, the watches' streams included: the first probe
	// started after the freeze finds the member unreachable.
	drain(slow.answered)
	select {
	case <-slow.answered:
	case <-time.After(4 * interval):
		t.Fatal("no probe answered")
	}
	slow.freeze(true)
	seen := slow.readyzSeen.Load()
	start = time.Now()
	probes := h.firstUnreachable(t, m, mesh, "busy", 4*interval, func() int64 { return slow.readyzSeen.Load() - seen })
	t.Logf("frozen: unreachable after %s, at probe %d after the freeze: %s", time.Since(start).Round(time.Millisecond), probes, m.Snapshot(mesh)["busy"].LastError)
	if probes > 1 {
		t.Errorf("a frozen member found unreachable at probe %d after the freeze, want the first", probes)
	}
	slow.freeze(false)
	framework.EventuallyT(t, 4*interval, "usable again once thawed", allUsable(m, mesh))
}

// firstUnreachable polls entry of mesh until it is unreachable, checking
// the reason, and returns what count said at that moment.
func (h *harness) firstUnreachable(t *testing.T, m *Manager, mesh *meshv1alpha1.ClusterMesh, entry string, within time.Duration, count func() int64) int64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		st := m.Snapshot(mesh)[entry]
		n := count()
		if !st.Reachable {
			if st.Reason != memberaccess.ErrUnreachable || st.LastError == "" {
				t.Errorf("unreachable with reason %q, error %q", st.Reason, st.LastError)
			}
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal(errors.New("still reachable after " + within.String()))
	return 0
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
