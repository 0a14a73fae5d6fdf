package framework

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A FakeMember is a hostile member API server on loopback, for the attacks
// of the end-to-end tests: it answers the probe (/readyz and the discovery
// document of kilo.squat.ai/v1alpha1) like a kube-apiserver, and does
// something a real one never would with everything else.
type FakeMemberMode string

const (
	// FakeMemberStall never answers Node or Peer lists and watches: it
	// holds every such request open until the client gives up.
	FakeMemberStall FakeMemberMode = "stall"
	// FakeMemberRedirect answers every request, the probe's included,
	// with a redirect to RedirectTarget.
	FakeMemberRedirect FakeMemberMode = "redirect"
	// FakeMemberError answers everything but the probe with HTTP 500 and
	// a text body holding ErrorBody.
	FakeMemberError FakeMemberMode = "error"
	// FakeMemberServe answers Node and Peer lists and watches as a
	// kube-apiserver would, with FakeMember.Content (StartServingFakeMember):
	// what no kube-apiserver would hold.
	FakeMemberServe FakeMemberMode = "serve"
	// FakeMemberHugeAnswer answers every Node and Peer list with a body of
	// HugeAnswerBytes.
	FakeMemberHugeAnswer FakeMemberMode = "huge"
)

// FakeMemberHost is a name the fake member's certificate holds besides
// localhost, 127.0.0.1 and ::1: what a test makes resolve where it wants
// (MeshServerOptions.PrivateHosts).
const FakeMemberHost = "fake-member.kilo-mesh.test"

// FakeMember is a running fake member API server.
type FakeMember struct {
	// URL is https://127.0.0.1:<port>.
	URL string
	// ErrorBody is what FakeMemberError answers: a marker that must never
	// reach users.
	ErrorBody string
	// RedirectTarget is a listener on loopback that FakeMemberRedirect
	// sends clients to; it counts the connections it gets.
	RedirectTarget *ConnCounter

	// Content is what FakeMemberServe serves.
	Content FakeContent

	mode     FakeMemberMode
	caPEM    []byte
	requests atomic.Int64
	stalled  atomic.Int64
	conns    atomic.Int64
	server   *http.Server
	ln       net.Listener
	done     chan struct{}
	once     sync.Once
	// peers counts the Peers the fake member holds: those its flooding
	// watches added.
	peers   atomic.Int64
	largest atomic.Int64
	// readyzHeld holds /readyz until the client gives up; readyzGivenUp
	// counts those.
	readyzHeld    atomic.Bool
	readyzGivenUp atomic.Int64

	mu   sync.Mutex
	open map[net.Conn]bool
}

// StartFakeMember starts a fake member API server in mode on loopback;
// Close stops it.
func StartFakeMember(mode FakeMemberMode) (*FakeMember, error) {
	return startFakeMember(mode, FakeContent{}, "127.0.0.1:0")
}

// StartServingFakeMember starts a fake member that serves content
// (FakeMemberServe) on address (such as 127.0.0.1:0).
func StartServingFakeMember(content FakeContent, address string) (*FakeMember, error) {
	return startFakeMember(FakeMemberServe, content, address)
}

func startFakeMember(mode FakeMemberMode, content FakeContent, address string) (*FakeMember, error) {
	ca, err := NewCA("fake-member-ca")
	if err != nil {
		return nil, err
	}
	serving, err := ca.IssueServing("fake-member", FakeMemberHost)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	f := &FakeMember{
		URL:       "https://" + ln.Addr().String(),
		ErrorBody: "FAKE-MEMBER-BODY-" + randomHex(8) + " aws_secret_access_key=AKIA-not-a-real-key",
		Content:   content,
		mode:      mode,
		caPEM:     ca.CertPEM,
		ln:        ln,
		done:      make(chan struct{}),
		open:      map[net.Conn]bool{},
	}
	if mode == FakeMemberRedirect {
		if f.RedirectTarget, err = NewConnCounter(); err != nil {
			ln.Close()
			return nil, err
		}
	}
	f.server = &http.Server{Handler: http.HandlerFunc(f.serve), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		ConnState: f.connState}
	go func() { _ = f.server.ServeTLS(ln, "", "") }()
	return f, nil
}

// Kubeconfig is a self-contained kubeconfig for the fake member, with a
// token it accepts (it checks none).
func (f *FakeMember) Kubeconfig() ([]byte, error) { return f.KubeconfigFor(f.URL) }

// KubeconfigFor is Kubeconfig naming the fake member by server, such as
// https://FakeMemberHost:<port>.
func (f *FakeMember) KubeconfigFor(server string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["fake"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: f.caPEM}
	cfg.AuthInfos["fake"] = &clientcmdapi.AuthInfo{Token: "fake-member-token"}
	cfg.Contexts["fake"] = &clientcmdapi.Context{Cluster: "fake", AuthInfo: "fake"}
	cfg.CurrentContext = "fake"
	return clientcmd.Write(*cfg)
}

// Requests counts the requests the fake member received.
func (f *FakeMember) Requests() int64 { return f.requests.Load() }

// Stalled counts the requests it is holding or has held open.
func (f *FakeMember) Stalled() int64 { return f.stalled.Load() }

// Connections counts the connections it accepted.
func (f *FakeMember) Connections() int64 { return f.conns.Load() }

// HoldReadyz makes the fake member hold every /readyz (on) until the
// client gives up, or answer it at once (off).
func (f *FakeMember) HoldReadyz(on bool) { f.readyzHeld.Store(on) }

// ReadyzGivenUp counts the held /readyz requests the client gave up on.
func (f *FakeMember) ReadyzGivenUp() int64 { return f.readyzGivenUp.Load() }

// Port is the port it listens on.
func (f *FakeMember) Port() int { return f.ln.Addr().(*net.TCPAddr).Port }

// DropConnections closes every open connection, so that clients must dial
// again; the fake member goes on listening.
func (f *FakeMember) DropConnections() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.open {
		c.Close()
	}
}

func (f *FakeMember) connState(c net.Conn, s http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch s {
	case http.StateNew:
		f.conns.Add(1)
		f.open[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(f.open, c)
	}
}

// Close stops the server and releases every stalled request.
func (f *FakeMember) Close() {
	f.once.Do(func() {
		close(f.done)
		_ = f.server.Close()
		if f.RedirectTarget != nil {
			f.RedirectTarget.Close()
		}
	})
}

func (f *FakeMember) serve(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if f.mode == FakeMemberRedirect {
		http.Redirect(w, r, "https://"+f.RedirectTarget.Addr+r.URL.RequestURI(), http.StatusFound)
		return
	}
	switch {
	case r.URL.Path == "/readyz" && f.readyzHeld.Load():
		select {
		case <-r.Context().Done():
			f.readyzGivenUp.Add(1)
		case <-f.done:
		}
		return
	case r.URL.Path == "/readyz":
		_, _ = w.Write([]byte("ok"))
		return
	case r.URL.Path == "/apis/kilo.squat.ai/v1alpha1":
		writeJSON(w, metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "kilo.squat.ai/v1alpha1",
			APIResources: []metav1.APIResource{{Name: "peers", Kind: "Peer", Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
		})
		return
	}
	switch f.mode {
	case FakeMemberServe:
		f.serveContent(w, r)
	case FakeMemberHugeAnswer:
		f.serveHuge(w, r)
	case FakeMemberError:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(f.ErrorBody))
	case FakeMemberStall:
		if r.URL.Path == "/api/v1/nodes" || strings.HasPrefix(r.URL.Path, "/apis/kilo.squat.ai/") {
			f.stalled.Add(1)
			select {
			case <-r.Context().Done():
			case <-f.done:
			}
			return
		}
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// ConnCounter is a TCP listener on loopback that counts the connections it
// accepts and closes them at once.
type ConnCounter struct {
	// Addr is its host:port.
	Addr  string
	ln    net.Listener
	count atomic.Int64
}

// NewConnCounter listens on 127.0.0.1.
func NewConnCounter() (*ConnCounter, error) { return NewConnCounterOn("127.0.0.1:0") }

// NewConnCounterOn listens on address, such as [::1]:0.
func NewConnCounterOn(address string) (*ConnCounter, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", address, err)
	}
	c := &ConnCounter{Addr: ln.Addr().String(), ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.count.Add(1)
			conn.Close()
		}
	}()
	return c, nil
}

// Connections is the number of connections accepted so far.
func (c *ConnCounter) Connections() int64 { return c.count.Load() }

// Close stops listening.
func (c *ConnCounter) Close() { _ = c.ln.Close() }
