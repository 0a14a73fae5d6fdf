package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// How the agent reaches its kube-apiserver. The agent runs inside its
// node's network namespace (`ip netns exec`), like kg on its node: the TUN
// device, the UDP socket and every netlink request of wireguard-go and of
// ip(8) then belong to the node without further care, including those
// wireguard-go makes later from its own goroutines (it rebinds its socket
// when the interface comes up). The one thing outside is the
// kube-apiserver, on the loopback of the test's namespace, which a process
// in another namespace cannot reach. So only the API connections cross:
// each is dialled on an OS thread that joins the test's namespace just for
// the socket() and connect() of that dial and then returns. A socket keeps
// the namespace it was made in, so the connection stays on that loopback.
// Nothing else is needed (no veth to the host, no address or route in the
// root namespace), and the dialer refuses anything but a loopback address,
// so the agent's API traffic cannot leave that loopback either.

// hostDialer dials loopback addresses in another network namespace.
type hostDialer struct {
	netns string // its path
}

// checkLoopback refuses anything but an IP literal on loopback: no name is
// resolved, and nothing beyond the host's loopback is dialled.
func checkLoopback(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("refusing to dial %q: the API server must be an IP literal on loopback", addr)
	}
	if !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("refusing to dial %s: not a loopback address", ap)
	}
	return nil
}

// DialContext has the signature of rest.Config.Dial.
func (d *hostDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	var c net.Conn
	err := framework.InNetnsPath(d.netns, func() error {
		// An IP literal with one address: the dialer creates and connects
		// the socket in this goroutine, hence on the locked thread (no
		// parallel dials).
		var dialer net.Dialer
		var err error
		c, err = dialer.DialContext(ctx, network, addr)
		return err
	})
	if err != nil {
		if c != nil {
			c.Close()
		}
		return nil, err
	}
	return c, nil
}
