package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EtcdClusterOptions configure StartEtcdCluster.
type EtcdClusterOptions struct {
	// Members is the number of etcd processes (default 3).
	Members int
	// PeerCN is the common name of the members' peer certificate, what
	// --peer-cert-allowed-cn may require (default "kilo-mesh-etcd-peer",
	// as in artifacts/components/ha).
	PeerCN string
	// ClientCN is the common name of the client certificate (default
	// "kilo-mesh-apiserver").
	ClientCN string
	// ExtraArgs are added to every member's flags, e.g. those of the HA
	// manifests; EtcdClusterFlags are the framework's own and may not be
	// among them.
	ExtraArgs []string
}

// EtcdClusterFlags are the flags StartEtcdCluster sets itself: names,
// addresses, data directories and certificate files, which are the
// environment's, not a manifest's.
var EtcdClusterFlags = []string{
	"--name", "--data-dir", "--listen-client-urls", "--advertise-client-urls", "--listen-peer-urls",
	"--initial-advertise-peer-urls", "--initial-cluster", "--initial-cluster-state", "--initial-cluster-token",
	"--listen-metrics-urls", "--trusted-ca-file", "--cert-file", "--key-file",
	"--peer-trusted-ca-file", "--peer-cert-file", "--peer-key-file",
}

// EtcdCluster is a cluster of etcd processes on loopback with TLS between
// members and to clients, both ways, from a CA of its own.
type EtcdCluster struct {
	// Endpoints are the members' client URLs (https).
	Endpoints []string
	// CAFile verifies the members; ClientCertFile and ClientKeyFile are a
	// client certificate they accept (the server's --etcd-* flags).
	CAFile, ClientCertFile, ClientKeyFile string

	members []*etcdMember
	client  *http.Client
}

type etcdMember struct {
	name      string
	clientURL string
	// metricsURL serves /readyz, /livez and /metrics over plain HTTP.
	metricsURL string
	proc       *process
}

// StartEtcdCluster starts opts.Members etcd processes (the environment's
// etcd binary) forming one cluster, and waits until every member is ready.
// The environment's Stop stops them.
func (e *Env) StartEtcdCluster(ctx context.Context, opts EtcdClusterOptions) (*EtcdCluster, error) {
	if opts.Members == 0 {
		opts.Members = 3
	}
	if opts.PeerCN == "" {
		opts.PeerCN = "kilo-mesh-etcd-peer"
	}
	if opts.ClientCN == "" {
		opts.ClientCN = "kilo-mesh-apiserver"
	}
	for _, a := range opts.ExtraArgs {
		flag, _, _ := strings.Cut(a, "=")
		for _, own := range EtcdClusterFlags {
			if flag == own {
				return nil, fmt.Errorf("ExtraArgs: %s is set by the framework", flag)
			}
		}
	}
	e.mu.Lock()
	n := e.meshStarts
	e.meshStarts++
	e.mu.Unlock()
	dir := filepath.Join(e.Dir, fmt.Sprintf("etcd-cluster-%d", n))
	ca, err := NewCA("etcd-ca")
	if err != nil {
		return nil, err
	}
	client, err := ca.Issue(CertRequest{CommonName: opts.ClientCN, Client: true})
	if err != nil {
		return nil, err
	}
	c := &EtcdCluster{
		CAFile:         filepath.Join(dir, "ca.crt"),
		ClientCertFile: filepath.Join(dir, "client.crt"),
		ClientKeyFile:  filepath.Join(dir, "client.key"),
	}
	if err := writeFiles(dir, map[string][]byte{"ca.crt": ca.CertPEM, "client.crt": client.CertPEM, "client.key": client.KeyPEM}); err != nil {
		return nil, err
	}
	ports, err := FreePorts(3 * opts.Members)
	if err != nil {
		return nil, err
	}
	var initial []string
	for i := range opts.Members {
		initial = append(initial, fmt.Sprintf("member-%d=https://127.0.0.1:%d", i, ports[3*i+1]))
	}
	for i := range opts.Members {
		m := &etcdMember{
			name:       fmt.Sprintf("member-%d", i),
			clientURL:  fmt.Sprintf("https://127.0.0.1:%d", ports[3*i]),
			metricsURL: fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+2]),
		}
		peerURL := fmt.Sprintf("https://127.0.0.1:%d", ports[3*i+1])
		mdir := filepath.Join(dir, m.name)
		// Server and client: members dial each other with it.
		peer, err := ca.Issue(CertRequest{CommonName: opts.PeerCN, DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true})
		if err != nil {
			return nil, err
		}
		// A client certificate too: the member's JSON gateway dials the
		// member itself with it.
		server, err := ca.Issue(CertRequest{CommonName: "etcd", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true})
		if err != nil {
			return nil, err
		}
		if err := writeFiles(mdir, map[string][]byte{
			"ca.crt": ca.CertPEM, "peer.crt": peer.CertPEM, "peer.key": peer.KeyPEM,
			"server.crt": server.CertPEM, "server.key": server.KeyPEM,
		}); err != nil {
			return nil, err
		}
		args := []string{
			"--name=" + m.name,
			"--data-dir=" + filepath.Join(mdir, "data"),
			"--listen-client-urls=" + m.clientURL,
			"--advertise-client-urls=" + m.clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=" + strings.Join(initial, ","),
			"--initial-cluster-state=new",
			"--initial-cluster-token=" + filepath.Base(dir),
			"--listen-metrics-urls=" + m.metricsURL,
			"--trusted-ca-file=" + filepath.Join(mdir, "ca.crt"),
			"--cert-file=" + filepath.Join(mdir, "server.crt"),
			"--key-file=" + filepath.Join(mdir, "server.key"),
			"--peer-trusted-ca-file=" + filepath.Join(mdir, "ca.crt"),
			"--peer-cert-file=" + filepath.Join(mdir, "peer.crt"),
			"--peer-key-file=" + filepath.Join(mdir, "peer.key"),
			// Fast on loopback; a process that stops or is killed loses
			// nothing by it, only a machine that crashes would.
			"--unsafe-no-fsync",
		}
		args = append(args, opts.ExtraArgs...)
		m.proc = newProcess(fmt.Sprintf("etcd %s", m.name), e.tools.Etcd, filepath.Join(e.Dir, "logs", fmt.Sprintf("etcd-cluster-%d-%s.log", n, m.name)), args)
		c.members = append(c.members, m)
		c.Endpoints = append(c.Endpoints, m.clientURL)
	}
	if c.client, err = c.httpClient(client); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, errors.New("environment is stopped")
	}
	e.etcdClusters = append(e.etcdClusters, c)
	e.mu.Unlock()
	for _, m := range c.members {
		if err := m.proc.start(); err != nil {
			return c, err
		}
	}
	for i := range c.members {
		if err := c.WaitMemberReady(ctx, i); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c *EtcdCluster) httpClient(client *KeyPair) (*http.Client, error) {
	cert, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}},
	}, nil
}

// Members returns the number of members.
func (c *EtcdCluster) Members() int { return len(c.members) }

// StopMember stops member i gracefully (SIGTERM); its data stays.
func (c *EtcdCluster) StopMember(i int) error { return c.members[i].proc.stop(10 * time.Second) }

// KillMember stops member i with SIGKILL.
func (c *EtcdCluster) KillMember(i int) error { return c.members[i].proc.stop(0) }

// StartMember restarts a stopped member on its data and waits until it is
// ready again.
func (c *EtcdCluster) StartMember(ctx context.Context, i int) error {
	if err := c.members[i].proc.start(); err != nil {
		return err
	}
	return c.WaitMemberReady(ctx, i)
}

// WaitMemberReady waits until member i's /readyz answers ok: it has
// joined a cluster with a quorum.
func (c *EtcdCluster) WaitMemberReady(ctx context.Context, i int) error {
	m := c.members[i]
	return m.proc.waitFor(ctx, "/readyz", 100*time.Millisecond, func(ctx context.Context) error {
		_, err := c.get(ctx, m.metricsURL+"/readyz")
		return err
	})
}

// Leader returns the index of the member that leads the cluster now.
func (c *EtcdCluster) Leader(ctx context.Context) (int, error) {
	for i, m := range c.members {
		if !m.proc.running() {
			continue
		}
		body, err := c.get(ctx, m.metricsURL+"/metrics")
		if err != nil {
			continue
		}
		if v, err := MetricSum(body, "etcd_server_is_leader"); err == nil && v == 1 {
			return i, nil
		}
	}
	return -1, errors.New("no member leads")
}

// Keys lists the keys under prefix as member i holds them, with the
// revision of its answer. serializable reads the member's own copy without
// asking the leader: what a restarted member has caught up on.
func (c *EtcdCluster) Keys(ctx context.Context, i int, prefix string, serializable bool) ([]string, int64, error) {
	end := []byte(prefix)
	end[len(end)-1]++
	req, err := json.Marshal(map[string]any{
		"key":          base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end":    base64.StdEncoding.EncodeToString(end),
		"keys_only":    true,
		"serializable": serializable,
	})
	if err != nil {
		return nil, 0, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.members[i].clientURL+"/v3/kv/range", bytes.NewReader(req))
	if err != nil {
		return nil, 0, err
	}
	body, err := c.do(r)
	if err != nil {
		return nil, 0, err
	}
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
		KVs []struct {
			Key []byte `json:"key"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, 0, fmt.Errorf("decoding etcd range: %w", err)
	}
	rev, _ := strconv.ParseInt(out.Header.Revision, 10, 64)
	keys := make([]string, 0, len(out.KVs))
	for _, kv := range out.KVs {
		keys = append(keys, string(kv.Key))
	}
	return keys, rev, nil
}

func (c *EtcdCluster) get(ctx context.Context, url string) ([]byte, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return c.do(r)
}

func (c *EtcdCluster) do(r *http.Request) ([]byte, error) {
	resp, err := c.client.Do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", r.Method, r.URL, resp.StatusCode, bytes.TrimSpace(body))
	}
	return body, nil
}

// Stop stops every member at once: the cluster's data is thrown away. The
// environment's Stop does it too.
func (c *EtcdCluster) Stop() error {
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() { errs[i] = m.proc.stop(0) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
