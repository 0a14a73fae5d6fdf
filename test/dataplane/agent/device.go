package main

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun"
	"k8s.io/klog/v2"
)

// routeProto marks the routes the agent adds, so that a restarted agent
// finds and removes those of its predecessor.
const routeProto = "44"

// mtu leaves room for WireGuard's overhead on a 1500-byte underlay.
const mtu = 1420

// dataplane is the node's userspace WireGuard device and routes, changed
// only by apply.
type dataplane struct {
	iface, underlay string
	port            int
	dev             *device.Device

	// What was applied last; peers by public key. After a failed apply
	// resync is set and the next one replaces every peer.
	peers   map[string]wgPeer
	routes  map[netip.Prefix]route
	address netip.Prefix
	up      bool
	resync  bool
}

// newDataplane creates the TUN device and the WireGuard device on it,
// listening on port, and removes routes a previous agent left behind. It
// runs inside the node's network namespace, so the TUN device, the UDP
// socket and the netlink socket wireguard-go opens are all the node's.
func newDataplane(ctx context.Context, iface, underlay string, port int, privateKeyB64 string) (*dataplane, error) {
	for _, family := range []string{"-4", "-6"} {
		if err := ip(ctx, family, "route", "flush", "proto", routeProto); err != nil {
			return nil, err
		}
	}
	t, err := tun.CreateTUN(iface, mtu)
	if err != nil {
		return nil, fmt.Errorf("creating TUN device %s: %w", iface, err)
	}
	logger := &device.Logger{
		Verbosef: func(format string, args ...any) {
			klog.V(4).InfoS(fmt.Sprintf(format, args...), "component", "wireguard")
		},
		Errorf: func(format string, args ...any) {
			klog.ErrorS(nil, fmt.Sprintf(format, args...), "component", "wireguard")
		},
	}
	d := &dataplane{
		iface: iface, underlay: underlay, port: port,
		dev:    device.NewDevice(t, conn.NewDefaultBind(), logger),
		peers:  map[string]wgPeer{},
		routes: map[netip.Prefix]route{},
	}
	if err := d.setPrivateKey(privateKeyB64); err != nil {
		d.close()
		return nil, err
	}
	if err := d.dev.IpcSet(fmt.Sprintf("listen_port=%d\n", port)); err != nil {
		d.close()
		return nil, fmt.Errorf("listen port %d: %w", port, err)
	}
	return d, nil
}

func (d *dataplane) close() { d.dev.Close() }

// publicKeyOf returns the public half of a base64 private key, "" if it is
// not one.
func publicKeyOf(privateB64 string) string {
	raw, err := base64.StdEncoding.DecodeString(privateB64)
	if err != nil {
		return ""
	}
	k, err := ecdh.X25519().NewPrivateKey(raw)
	if err != nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(k.PublicKey().Bytes())
}

// setPrivateKey replaces the device's key (kg with a new key file).
// Sessions made with the old key end; peers stay.
func (d *dataplane) setPrivateKey(b64 string) error {
	h, err := hexKey(b64)
	if err != nil {
		return fmt.Errorf("private key: %w", err)
	}
	return d.dev.IpcSet("private_key=" + h + "\n")
}

// apply makes the device and routes hold cfg, changing only what differs
// from what was applied before. After an error the next apply redoes
// everything.
func (d *dataplane) apply(ctx context.Context, cfg config) (err error) {
	defer func() {
		if err != nil {
			d.peers, d.routes, d.address, d.up, d.resync = map[string]wgPeer{}, map[netip.Prefix]route{}, netip.Prefix{}, false, true
		}
	}()
	want := map[string]wgPeer{}
	for _, p := range cfg.Peers {
		want[p.PublicKey] = p
	}
	if uapi, err := d.peerChanges(want); err != nil {
		return err
	} else if uapi != "" {
		if err := d.dev.IpcSet(uapi); err != nil {
			return fmt.Errorf("configuring WireGuard peers: %w", err)
		}
	}
	d.peers, d.resync = want, false

	var cmds []string
	switch {
	case cfg.IsLeader && (!d.up || d.address != cfg.Address):
		cmds = append(cmds, "address flush dev "+d.iface)
		if cfg.Address.IsValid() {
			cmds = append(cmds, fmt.Sprintf("address add %s dev %s", cfg.Address, d.iface))
		}
		cmds = append(cmds, "link set "+d.iface+" up")
	case !cfg.IsLeader && d.up:
		// A member's WireGuard interface is down, as on a Kilo member;
		// the kernel drops the routes through it.
		cmds = append(cmds, "link set "+d.iface+" down", "address flush dev "+d.iface)
	}
	wantRoutes := map[netip.Prefix]route{}
	for _, r := range cfg.Routes {
		wantRoutes[r.Dst] = r
	}
	for dst := range d.routes {
		if _, ok := wantRoutes[dst]; !ok {
			cmds = append(cmds, fmt.Sprintf("route del %s proto %s", dst, routeProto))
		}
	}
	// Routes are replaced whenever anything changed: the kernel may have
	// dropped some with the interface.
	if len(cmds) > 0 || !maps.Equal(d.routes, wantRoutes) {
		for _, dst := range sortedKeys(wantRoutes) {
			r := wantRoutes[dst]
			if r.Via.IsValid() {
				cmds = append(cmds, fmt.Sprintf("route replace %s via %s dev %s proto %s", dst, r.Via, d.underlay, routeProto))
			} else {
				cmds = append(cmds, fmt.Sprintf("route replace %s dev %s proto %s", dst, d.iface, routeProto))
			}
		}
	}
	if len(cmds) > 0 {
		if err := ipBatch(ctx, cmds); err != nil {
			return err
		}
	}
	d.routes, d.address, d.up = wantRoutes, cfg.Address, cfg.IsLeader
	return nil
}

// peerChanges returns the UAPI text that turns the applied peers into want:
// removals, then every new or changed peer in full. Unchanged peers are
// left alone, so their sessions survive. After a failure (resync) what the
// device holds is unknown: every peer is replaced.
func (d *dataplane) peerChanges(want map[string]wgPeer) (string, error) {
	var b strings.Builder
	if d.resync {
		b.WriteString("replace_peers=true\n")
	}
	for key := range d.peers {
		if _, ok := want[key]; !ok {
			h, err := hexKey(key)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "public_key=%s\nremove=true\n", h)
		}
	}
	for _, key := range sortedKeys(want) {
		p := want[key]
		if old, ok := d.peers[key]; ok && equalPeer(old, p) {
			continue
		}
		h, err := hexKey(key)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "public_key=%s\n", h)
		if p.Endpoint.IsValid() {
			fmt.Fprintf(&b, "endpoint=%s\n", p.Endpoint)
		}
		if p.PresharedKey != "" {
			psk, err := hexKey(p.PresharedKey)
			if err != nil {
				return "", fmt.Errorf("preshared key of peer %s: %w", key, err)
			}
			fmt.Fprintf(&b, "preshared_key=%s\n", psk)
		}
		fmt.Fprintf(&b, "persistent_keepalive_interval=%d\nreplace_allowed_ips=true\n", p.Keepalive)
		for _, a := range p.AllowedIPs {
			fmt.Fprintf(&b, "allowed_ip=%s\n", a)
		}
	}
	return b.String(), nil
}

func equalPeer(a, b wgPeer) bool {
	return a.Endpoint == b.Endpoint && a.Keepalive == b.Keepalive && a.PresharedKey == b.PresharedKey && slices.Equal(a.AllowedIPs, b.AllowedIPs)
}

// sortedKeys orders map keys by their text, so that the commands the
// agent issues (and logs) come in a stable order.
func sortedKeys[K comparable, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return keys
}

// ipBatch runs iproute2's ip on commands, one a line. -force goes on after
// a failing line; a "del" of a route the kernel already dropped (it drops
// the routes of an interface that goes down) is no failure.
func ipBatch(ctx context.Context, cmds []string) error {
	cmd := exec.CommandContext(ctx, "ip", "-force", "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	var failed []string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" && !strings.Contains(line, "No such process") && !strings.HasPrefix(line, "Command failed") {
			failed = append(failed, line)
		}
	}
	if len(failed) == 0 && stderr.Len() > 0 {
		return nil
	}
	return fmt.Errorf("ip -batch: %w: %s", err, strings.Join(failed, "; "))
}

func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// enableForwarding sets what a Kilo node needs to pass packets between its
// pods, its WireGuard interface and the underlay: IP forwarding (kg sets
// it), and no reverse-path filter (replies from other clusters come back
// through a different interface than the requests of the pods behind a
// leader left by). /proc/sys/net belongs to the reader's namespace.
func enableForwarding() error {
	settings := map[string]string{
		"/proc/sys/net/ipv4/ip_forward":             "1",
		"/proc/sys/net/ipv6/conf/all/forwarding":    "1",
		"/proc/sys/net/ipv4/conf/all/rp_filter":     "0",
		"/proc/sys/net/ipv4/conf/default/rp_filter": "0",
	}
	ifaces, err := os.ReadDir("/proc/sys/net/ipv4/conf")
	if err != nil {
		return err
	}
	for _, i := range ifaces {
		settings["/proc/sys/net/ipv4/conf/"+i.Name()+"/rp_filter"] = "0"
	}
	for path, v := range settings {
		if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
			return fmt.Errorf("setting %s: %w", path, err)
		}
	}
	return nil
}
