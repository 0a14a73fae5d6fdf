//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestShutdownWithLateConnection stops a server while a client holds a
// connection the server accepted just before it stopped listening, and
// completes its TLS handshake (HTTP/2) only after the server told its
// connections to go away. Go's HTTP/2 server never tells such a connection
// (golang/go#81153) and its Shutdown waits for it; the server must still
// exit within framework.ShutdownBound, as a client of the aggregator may
// dial at that moment whenever watches end on SIGTERM.
func TestShutdownWithLateConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := env.StartMeshServer(ctx, framework.MeshServerOptions{SkipRegistration: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(m.Port))

	type dials struct {
		conns []net.Conn
		err   error
	}
	dialed := make(chan dials, 1)
	go func() {
		conns, err := dialUntilRefused(ctx, addr)
		dialed <- dials{conns, err}
	}()
	// Dialing well before SIGTERM: a server that stops listening at once
	// would otherwise leave only connections its accept loop never took,
	// which the kernel resets (CI at 89fc849).
	time.Sleep(500 * time.Millisecond)
	stopped := make(chan error, 1)
	began := time.Now()
	go func() { stopped <- m.Stop() }()
	held := <-dialed
	if held.err != nil {
		t.Fatal(held.err)
	}
	// The sweep that tells connections to go away runs as the listener closes.
	time.Sleep(200 * time.Millisecond)
	late, err := handshakeH2(held.conns, m.CABundle)
	if err != nil {
		t.Fatalf("none of the %d connections made in the last 2 s before the server stopped listening completed its handshake: %v", len(held.conns), err)
	}
	defer late.Close()

	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	t.Logf("exited %s after SIGTERM with a connection registered after the sweep", time.Since(began).Round(10*time.Millisecond))
}

// dialUntilRefused dials addr until the listener is gone and returns the
// connections made in the last two seconds before that, newest first: the
// kernel accepted them, the server's accept loop most likely did too, and
// none has waited long enough (5 s) for the server to close it as idle.
func dialUntilRefused(ctx context.Context, addr string) ([]net.Conn, error) {
	type dialed struct {
		conn net.Conn
		at   time.Time
	}
	var kept []dialed
	for ctx.Err() == nil {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			var recent []net.Conn
			for i := len(kept) - 1; i >= 0; i-- {
				recent = append(recent, kept[i].conn)
			}
			if len(recent) == 0 {
				return nil, fmt.Errorf("dialing %s: refused before any connection: %w", addr, err)
			}
			return recent, nil
		}
		kept = append(kept, dialed{c, time.Now()})
		for len(kept) > 0 && time.Since(kept[0].at) > 2*time.Second {
			kept[0].conn.Close()
			kept = kept[1:]
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("%s still listens: %w", addr, ctx.Err())
}

// handshakeH2 completes, on the newest of conns that the server still
// holds, the TLS handshake with HTTP/2 and the client's preface, and closes
// the others.
func handshakeH2(conns []net.Conn, caBundle []byte) (net.Conn, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		return nil, errors.New("no CA in the server's bundle")
	}
	var errs []error
	var late net.Conn
	for _, c := range conns {
		if late != nil {
			c.Close()
			continue
		}
		tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: framework.MeshServiceDNSName, NextProtos: []string{"h2"}})
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc.Handshake(); err != nil {
			errs = append(errs, err)
			c.Close()
			continue
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			tc.Close()
			return nil, fmt.Errorf("negotiated %q, not h2", p)
		}
		// The client preface and an empty SETTINGS frame.
		if _, err := tc.Write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)); err != nil {
			errs = append(errs, err)
			tc.Close()
			continue
		}
		_ = tc.SetDeadline(time.Time{})
		late = tc
	}
	if late == nil {
		return nil, errors.Join(errs...)
	}
	return late, nil
}
