package framework

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"k8s.io/client-go/tools/clientcmd"
)

// CoreDNSBinary is the coredns that hack/build-tools.sh builds (from its
// own module, hack/coredns; make test-e2e and make test-dataplane build it);
// the error says how to build it.
func CoreDNSBinary() (string, error) { return toolBinary("coredns") }

// CoreDNSLoopback are what a CoreDNS process on loopback has instead of a
// pod's network: where it listens, the kubeconfig its kubernetes plugin
// reads the cluster with (a pod reads it in-cluster), and ports on its
// address for the plugins that listen besides DNS and for the upstream
// resolver (where nothing answers: names outside the cluster's zones go
// nowhere else).
type CoreDNSLoopback struct {
	Addr                                             netip.Addr
	Port                                             int
	Kubeconfig                                       string
	HealthPort, ReadyPort, MetricsPort, UpstreamPort int
}

// NewCoreDNSLoopback picks free ports on 127.0.0.1.
func NewCoreDNSLoopback(kubeconfig string) (CoreDNSLoopback, error) {
	ports, err := FreePorts(5)
	if err != nil {
		return CoreDNSLoopback{}, err
	}
	return CoreDNSLoopback{Addr: netip.MustParseAddr("127.0.0.1"), Port: ports[0], Kubeconfig: kubeconfig,
		HealthPort: ports[1], ReadyPort: ports[2], MetricsPort: ports[3], UpstreamPort: ports[4]}, nil
}

// DNS is the address CoreDNS answers on.
func (l CoreDNSLoopback) DNS() netip.AddrPort { return netip.AddrPortFrom(l.Addr, uint16(l.Port)) }

func (l CoreDNSLoopback) at(port int) string {
	return netip.AddrPortFrom(l.Addr, uint16(port)).String()
}

// The lines of a pod's Corefile that LoopbackCorefile rewrites.
var (
	serverLine     = regexp.MustCompile(`^(\s*)\.:53 \{\s*$`)
	kubernetesLine = regexp.MustCompile(`^\s*kubernetes\s.*\{\s*$`)
	healthLine     = regexp.MustCompile(`^(\s*)health(\s*\{)?\s*$`)
	readyLine      = regexp.MustCompile(`^(\s*)ready\s*$`)
	metricsLine    = regexp.MustCompile(`^(\s*)prometheus :9153\s*$`)
	forwardLine    = regexp.MustCompile(`^(\s*)forward \. /etc/resolv\.conf(.*)$`)
)

// LoopbackCorefile is src, the Corefile a cluster's CoreDNS pods read, for
// a process on loopback: the server block .:53 listens on l's address and
// port, the kubernetes plugin gets l's kubeconfig, and health, ready,
// prometheus and forward get l's ports. Every other line, the kubernetes
// plugin's own included, is src's.
func LoopbackCorefile(src string, l CoreDNSLoopback) (string, error) {
	var out []string
	servers, plugins := 0, 0
	lines := strings.SplitAfter(src, "\n")
	for i, line := range lines {
		switch {
		case serverLine.MatchString(line):
			servers++
			m := serverLine.FindStringSubmatch(line)
			out = append(out, fmt.Sprintf("%s.:%d {\n", m[1], l.Port), fmt.Sprintf("%s    bind %s\n", m[1], l.Addr))
		case kubernetesLine.MatchString(line):
			plugins++
			ind := "        "
			if i+1 < len(lines) {
				ind = line[:len(line)-len(strings.TrimLeft(line, " \t"))] + "    "
				if next := lines[i+1]; strings.TrimSpace(next) != "}" {
					ind = next[:len(next)-len(strings.TrimLeft(next, " \t"))]
				}
			}
			out = append(out, line, fmt.Sprintf("%skubeconfig %s\n", ind, l.Kubeconfig))
		case healthLine.MatchString(line):
			m := healthLine.FindStringSubmatch(line)
			out = append(out, fmt.Sprintf("%shealth %s%s\n", m[1], l.at(l.HealthPort), m[2]))
		case readyLine.MatchString(line):
			out = append(out, fmt.Sprintf("%sready %s\n", readyLine.FindStringSubmatch(line)[1], l.at(l.ReadyPort)))
		case metricsLine.MatchString(line):
			out = append(out, fmt.Sprintf("%sprometheus %s\n", metricsLine.FindStringSubmatch(line)[1], l.at(l.MetricsPort)))
		case forwardLine.MatchString(strings.TrimSuffix(line, "\n")):
			m := forwardLine.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
			out = append(out, fmt.Sprintf("%sforward . %s%s\n", m[1], l.at(l.UpstreamPort), m[2]))
		default:
			out = append(out, line)
		}
	}
	if servers != 1 || plugins != 1 {
		return "", fmt.Errorf("want one server block .:53 and one kubernetes plugin with a block, found %d and %d in:\n%s", servers, plugins, src)
	}
	return strings.Join(out, ""), nil
}

// CoreDNSKubeconfig writes into dir a kubeconfig of cluster i for
// CoreDNS's ServiceAccount (a token of ns/name), reaching the cluster at
// server ("" for its own URL): the identity, and so the RBAC, of CoreDNS in
// a pod.
func (e *Env) CoreDNSKubeconfig(ctx context.Context, cluster int, ns, name, server, dir string) (string, error) {
	token, err := e.ServiceAccountToken(ctx, cluster, ns, name, time.Hour)
	if err != nil {
		return "", err
	}
	data, err := e.KubeconfigFor(cluster, name, token)
	if err != nil {
		return "", err
	}
	if server != "" {
		cfg, err := clientcmd.Load(data)
		if err != nil {
			return "", err
		}
		for _, c := range cfg.Clusters {
			c.Server = server
		}
		if data, err = clientcmd.Write(*cfg); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, "coredns-kubeconfig.yaml")
	return path, os.WriteFile(path, data, 0o600)
}

// CoreDNS is a coredns process on loopback: in the test's own network
// namespace, or in one of an Underlay.
type CoreDNS struct {
	Loopback CoreDNSLoopback
	// Corefile is the path of the Corefile it runs; LogPath its log.
	Corefile, LogPath string

	proc  *process
	netns string
}

// StartCoreDNS writes corefile into dir and runs coredns on it, in namespace
// netns of u when u is not nil, and waits until its ready plugin says the
// kubernetes plugin has synced (so its RBAC holds).
func StartCoreDNS(ctx context.Context, dir, corefile string, l CoreDNSLoopback, u *Underlay, netns string) (*CoreDNS, error) {
	bin, err := CoreDNSBinary()
	if err != nil {
		return nil, err
	}
	c := &CoreDNS{Loopback: l, Corefile: filepath.Join(dir, "Corefile")}
	if err := os.WriteFile(c.Corefile, []byte(corefile), 0o600); err != nil {
		return nil, err
	}
	if u != nil {
		p, err := u.Start(netns, "coredns", bin, "-conf", c.Corefile)
		if err != nil {
			return nil, err
		}
		c.proc, c.netns, c.LogPath = p.proc, netns, p.LogPath
	} else {
		c.LogPath = filepath.Join(dir, "coredns.log")
		c.proc = newProcess("coredns", bin, c.LogPath, []string{"-conf", c.Corefile})
		if err := c.proc.start(); err != nil {
			return nil, err
		}
	}
	if err := c.waitReady(ctx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// Restart runs CoreDNS anew on corefile, as the pods of a rollout restart
// read the ConfigMap anew.
func (c *CoreDNS) Restart(ctx context.Context, corefile string) error {
	if err := c.proc.stop(10 * time.Second); err != nil {
		return err
	}
	if err := os.WriteFile(c.Corefile, []byte(corefile), 0o600); err != nil {
		return err
	}
	if err := c.proc.start(); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// LogTail returns the last n lines of its log.
func (c *CoreDNS) LogTail(n int) string { return tailFile(c.LogPath, n) }

// Stop ends the process.
func (c *CoreDNS) Stop() error { return c.proc.stop(10 * time.Second) }

// Query asks CoreDNS one question from its own network namespace.
func (c *CoreDNS) Query(name string, qtype dnsmessage.Type) (*DNSAnswer, error) {
	var a *DNSAnswer
	err := c.in(func() (err error) {
		a, err = QueryDNS(c.Loopback.DNS(), name, qtype, 2*time.Second)
		return err
	})
	return a, err
}

func (c *CoreDNS) in(f func() error) error {
	if c.netns == "" {
		return f()
	}
	return InNetns(c.netns, f)
}

// waitReady waits until CoreDNS answers on its DNS port, then until its
// ready plugin says 200, both from CoreDNS's namespace: the ready plugin says
// 200 before CoreDNS binds its DNS port (up to 100ms before, unloaded).
func (c *CoreDNS) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	addr := c.Loopback.at(c.Loopback.ReadyPort)
	return c.proc.waitFor(ctx, "readiness", 200*time.Millisecond, func(ctx context.Context) error {
		var status string
		err := c.in(func() error {
			if err := answersDNS(c.Loopback.DNS(), time.Second); err != nil {
				return err
			}
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := fmt.Fprintf(conn, "GET /ready HTTP/1.0\r\nHost: %s\r\n\r\n", addr); err != nil {
				return err
			}
			status, err = bufio.NewReader(conn).ReadString('\n')
			return err
		})
		if err != nil {
			return err
		}
		if f := strings.Fields(status); len(f) < 2 || f[1] != strconv.Itoa(200) {
			return fmt.Errorf("ready answers %q", strings.TrimSpace(status))
		}
		return nil
	})
}
