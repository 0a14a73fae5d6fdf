package framework

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// AddHostOn is AddHost on another bridge of the underlay (AddBridge): a
// network of its own, such as the private side of a NAT router.
func (u *Underlay) AddHostOn(ctx context.Context, bridge, name string, addrs ...netip.Prefix) (string, error) {
	ns := u.Namespace(name)
	if err := u.addNamespace(ctx, ns); err != nil {
		return "", err
	}
	if err := u.IP(ctx, ns, "link set lo up"); err != nil {
		return "", err
	}
	return ns, u.AddLink(ctx, ns, bridge, "eth0", addrs...)
}

// AddLink connects namespace ns to bridge with a new interface named dev
// holding addrs, and brings it up.
func (u *Underlay) AddLink(ctx context.Context, ns, bridge, dev string, addrs ...netip.Prefix) error {
	u.mu.Lock()
	port := fmt.Sprintf("p%d", u.ports)
	u.ports++
	u.mu.Unlock()
	// Created inside the bridge namespace, its peer end placed straight into
	// the host's: no interface ever appears in the root namespace.
	if err := u.IP(ctx, u.bridge,
		fmt.Sprintf("link add %s type veth peer name %s netns %s", port, dev, ns),
		fmt.Sprintf("link set %s master %s up", port, bridge),
	); err != nil {
		return err
	}
	cmds := []string{"link set " + dev + " up"}
	for _, a := range addrs {
		cmds = append(cmds, addrCommand(a, dev))
	}
	return u.IP(ctx, ns, cmds...)
}

// AddBridge makes another bridge beside the underlay's, in the same
// namespace: a separate network that hosts join with AddHostOn or AddLink.
func (u *Underlay) AddBridge(ctx context.Context, name string) error {
	return u.IP(ctx, u.bridge, "link add "+name+" type bridge", "link set "+name+" up")
}

// Exec runs a program inside namespace ns (`ip netns exec`) with stdin.
func (u *Underlay) Exec(ctx context.Context, ns, stdin string, path string, args ...string) error {
	if _, stderr, err := runCommand(ctx, strings.NewReader(stdin), nil, u.ip, append([]string{"netns", "exec", ns, path}, args...)...); err != nil {
		return fmt.Errorf("%s in network namespace %s: %w: %s", path, ns, err, strings.TrimSpace(stderr))
	}
	return nil
}

// Stop stops the process (SIGTERM, SIGKILL after 2 s); Restart starts it
// again with the same arguments, its log appended to.
func (p *NetnsProcess) Stop() error { return p.proc.stop(2 * time.Second) }

// Restart starts a stopped process again.
func (p *NetnsProcess) Restart() error { return p.proc.start() }
