package framework

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// TCPProxy stands in for a Service in front of several replicas: it
// listens on a loopback port and hands each connection to the next backend
// in turn that accepts one, as kube-proxy spreads connections over the
// ready endpoints; a backend that refuses (stopped, killed) is skipped, so
// new connections fail over at once. Connections already open to a backend
// that goes away break, as they do behind a Service.
type TCPProxy struct {
	// Port is the proxy's port on 127.0.0.1.
	Port int

	backends []string
	ln       net.Listener
	next     atomic.Uint64
	accepted []atomic.Int64 // connections handed to each backend

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartTCPProxy listens on 127.0.0.1:port (0: a free port) and forwards to
// backends, host:port addresses on loopback.
func StartTCPProxy(port int, backends ...string) (*TCPProxy, error) {
	if err := loopbackBackends(backends); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	return serveTCPProxy(ln, backends), nil
}

// StartTCPProxyIn listens on 127.0.0.1 of network namespace netns (a free
// port) and forwards to backends on the test's own loopback: how a process
// in a node's namespace reaches a kube-apiserver, as a pod reaches it
// through the kubernetes Service.
func StartTCPProxyIn(netns string, backends ...string) (*TCPProxy, error) {
	if err := loopbackBackends(backends); err != nil {
		return nil, err
	}
	var ln net.Listener
	err := InNetns(netns, func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		return nil, err
	}
	return serveTCPProxy(ln, backends), nil
}

// loopbackBackends refuses any backend off loopback, before any dial.
func loopbackBackends(backends []string) error {
	for _, b := range backends {
		host, _, err := net.SplitHostPort(b)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("backend %q: only loopback addresses", b)
		}
	}
	return nil
}

func serveTCPProxy(ln net.Listener, backends []string) *TCPProxy {
	p := &TCPProxy{
		Port:     ln.Addr().(*net.TCPAddr).Port,
		backends: backends,
		ln:       ln,
		accepted: make([]atomic.Int64, len(backends)),
		conns:    map[net.Conn]struct{}{},
	}
	p.wg.Add(1)
	go p.serve()
	return p
}

// Accepted returns how many connections went to each backend.
func (p *TCPProxy) Accepted() []int64 {
	out := make([]int64, len(p.accepted))
	for i := range p.accepted {
		out[i] = p.accepted[i].Load()
	}
	return out
}

func (p *TCPProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.forward(c)
		}()
	}
}

// forward connects c to the first backend, from the next in turn, that
// accepts, and copies both ways until either side closes.
func (p *TCPProxy) forward(c net.Conn) {
	start := int(p.next.Add(1))
	for k := range p.backends {
		i := (start + k) % len(p.backends)
		b, err := net.DialTimeout("tcp", p.backends[i], time.Second)
		if err != nil {
			continue
		}
		p.accepted[i].Add(1)
		if !p.track(b) {
			b.Close()
			return
		}
		defer p.untrack(b)
		done := make(chan struct{}, 2)
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			// Half-close towards dst so that it sees the end, as a
			// Service's connection would.
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			done <- struct{}{}
		}
		go pipe(b, c)
		go pipe(c, b)
		<-done
		<-done
		return
	}
	// No backend: the client sees the connection closed, as with a
	// Service without ready endpoints it would see it refused.
}

func (p *TCPProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *TCPProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// Close stops listening and closes every connection.
func (p *TCPProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
