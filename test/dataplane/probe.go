package dataplane

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Pods and services answer UDP echoes with their node's name, so a probe
// knows which node answered (a service must be answered by its anchor).
// The sockets live in the nodes' namespaces but are served by the test
// process itself (framework.InNetns), so no process has to run in a
// namespace for it.

// echoServers are the echo sockets of the bed, by address.
type echoServers struct {
	mu    sync.Mutex
	conns map[netip.Addr]*net.UDPConn
}

func newEchoServers() *echoServers { return &echoServers{conns: map[netip.Addr]*net.UDPConn{}} }

// listen answers echoes on addr:EchoPort inside namespace ns as node.
func (e *echoServers) listen(ns, node string, addr netip.Addr) error {
	var c *net.UDPConn
	err := framework.InNetns(ns, func() error {
		var err error
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, EchoPort)))
		return err
	})
	if err != nil {
		return fmt.Errorf("echo server on %s in %s: %w", addr, ns, err)
	}
	e.mu.Lock()
	e.conns[addr] = c
	e.mu.Unlock()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			_, _ = c.WriteToUDPAddrPort(append([]byte(node+" "), buf[:n]...), from)
		}
	}()
	return nil
}

// stop closes the echo server on addr.
func (e *echoServers) stop(addr netip.Addr) {
	e.mu.Lock()
	c := e.conns[addr]
	delete(e.conns, addr)
	e.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

func (e *echoServers) close() {
	e.mu.Lock()
	conns := e.conns
	e.conns = map[netip.Addr]*net.UDPConn{}
	e.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Endpoint is an address inside a node's namespace.
type Endpoint struct {
	Node *Node
	Addr netip.Addr
}

func (e Endpoint) String() string { return e.Node.Name + "/" + e.Addr.String() }

// Pair is a probe from a pod to a pod or service. To.Node is the node that
// must answer.
type Pair struct {
	From, To Endpoint
}

func (p Pair) String() string { return p.From.String() + " -> " + p.To.String() }

// Result is the outcome of probing a pair.
type Result struct {
	Pair
	OK bool
	// First is when the first answer came.
	First time.Time
	// RTT is the median of a few echoes right after the first answer.
	RTT time.Duration
	// Err says why the pair failed: the last send error, a wrong
	// responder, or no answer.
	Err error
}

// probeOptions shape probe.
type probeOptions struct {
	// Until is the deadline for a first answer.
	Until time.Time
	// Interval is the mean pause between probes while none is answered.
	// Each pause is drawn from [Interval/2, 3*Interval/2): probes in both
	// directions ticking in lockstep would make both WireGuard ends start
	// their handshakes at the same instant, again and again, which real
	// traffic does not (crossed handshakes both fail, and each side tries
	// again when its next packet comes 5 s later).
	Interval time.Duration
	// RTTSamples is the number of echoes timed after the first answer.
	RTTSamples int
}

// probe sends echoes from p.From to p.To every Interval until one is
// answered or Until passes; replies only count for probes sent by this
// call, so a first answer after a change means a packet went through after
// it.
func probe(p Pair, o probeOptions) Result {
	r := Result{Pair: p}
	var c *net.UDPConn
	err := framework.InNetns(p.From.Node.Namespace, func() error {
		var err error
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.From.Addr, 0)))
		return err
	})
	if err != nil {
		r.Err = err
		return r
	}
	defer c.Close()
	dst := netip.AddrPortFrom(p.To.Addr, EchoPort)
	sent := map[uint64]time.Time{}
	var seq uint64
	buf := make([]byte, 1500)
	// exchange sends one echo and waits up to wait for an answer to it, or
	// with anyEcho set, to any echo sent so far.
	exchange := func(wait time.Duration, anyEcho bool) (time.Time, time.Duration, error) {
		seq++
		sent[seq] = time.Now()
		if _, err := c.WriteToUDPAddrPort([]byte(strconv.FormatUint(seq, 10)), dst); err != nil {
			time.Sleep(wait)
			return time.Time{}, 0, err
		}
		deadline := time.Now().Add(wait)
		for {
			_ = c.SetReadDeadline(deadline)
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return time.Time{}, 0, fmt.Errorf("no answer from %s", p.To)
			}
			at := time.Now()
			node, num, _ := strings.Cut(string(buf[:n]), " ")
			s, err := strconv.ParseUint(num, 10, 64)
			if err != nil || sent[s].IsZero() || (!anyEcho && s != seq) {
				continue
			}
			if node != p.To.Node.Name {
				return time.Time{}, 0, fmt.Errorf("%s answered, not %s", node, p.To.Node.Name)
			}
			return at, at.Sub(sent[s]), nil
		}
	}
	for time.Now().Before(o.Until) {
		wait := min(o.Interval/2+rand.N(o.Interval), time.Until(o.Until))
		at, _, err := exchange(wait, true)
		if err != nil {
			r.Err = err
			continue
		}
		r.OK, r.First, r.Err = true, at, nil
		break
	}
	if !r.OK {
		return r
	}
	var rtts []time.Duration
	for range o.RTTSamples {
		if _, rtt, err := exchange(time.Second, false); err == nil {
			rtts = append(rtts, rtt)
		}
	}
	if len(rtts) > 0 {
		slices.Sort(rtts)
		r.RTT = rtts[len(rtts)/2]
	}
	return r
}

// probeAll probes the pairs concurrently.
func probeAll(pairs []Pair, o probeOptions) []Result {
	out := make([]Result, len(pairs))
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Go(func() { out[i] = probe(p, o) })
	}
	wg.Wait()
	return out
}

// Reach probes every pair until it is answered, for at most timeout each.
func (b *Bed) Reach(ctx context.Context, pairs []Pair, timeout time.Duration) []Result {
	until := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	return probeAll(pairs, probeOptions{Until: until, Interval: 200 * time.Millisecond, RTTSamples: 5})
}

// Unreachable probes every pair for window and returns the pairs that were
// answered (which should not have been).
func (b *Bed) Unreachable(pairs []Pair, window time.Duration) []Result {
	var answered []Result
	for _, r := range probeAll(pairs, probeOptions{Until: time.Now().Add(window), Interval: 250 * time.Millisecond}) {
		if r.OK {
			answered = append(answered, r)
		}
	}
	return answered
}

// Failed returns the results that are not OK.
func Failed(results []Result) []Result {
	var out []Result
	for _, r := range results {
		if !r.OK {
			out = append(out, r)
		}
	}
	return out
}

// DescribeFailures lists failed results, one a line.
func DescribeFailures(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "  %s: %v\n", r.Pair, r.Err)
	}
	return b.String()
}
