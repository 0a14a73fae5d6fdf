package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// The control plane of an environment: its PKI, the shared etcd and the
// kube-apiservers, started, checked for readiness, stopped and restarted.

func (e *Env) writePKI() error {
	var err error
	pki := filepath.Join(e.Dir, "pki")
	if e.frontProxyCA, err = NewCA("front-proxy-ca"); err != nil {
		return err
	}
	fpClient, err := e.frontProxyCA.Issue(CertRequest{CommonName: "front-proxy-client", Client: true})
	if err != nil {
		return err
	}
	if e.meshCA, err = NewCA("kilo-mesh-apiserver-ca"); err != nil {
		return err
	}
	var tokens strings.Builder
	for _, u := range e.users {
		token := randomHex(16)
		e.tokens[u.Name] = token
		// token,user,uid,"group1,group2"
		fmt.Fprintf(&tokens, "%s,%s,%s,\"%s\"\n", token, u.Name, "uid-"+u.Name, strings.Join(u.Groups, ","))
	}
	if err := writeFiles(pki, map[string][]byte{
		"front-proxy-ca.crt":     e.frontProxyCA.CertPEM,
		"front-proxy-client.crt": fpClient.CertPEM,
		"front-proxy-client.key": fpClient.KeyPEM,
		"mesh-ca.crt":            e.meshCA.CertPEM,
		"tokens.csv":             []byte(tokens.String()),
	}); err != nil {
		return err
	}
	for i := range e.opts.Clusters {
		c := &Cluster{
			Index:       i,
			Name:        fmt.Sprintf("cluster-%d", i),
			ServiceCIDR: fmt.Sprintf("10.%d.0.0/16", 96+i),
			EtcdPrefix:  fmt.Sprintf("/cluster-%d", i),
		}
		if i < len(e.opts.ServiceCIDRs) && e.opts.ServiceCIDRs[i] != "" {
			c.ServiceCIDR = e.opts.ServiceCIDRs[i]
		}
		if c.ca, err = NewCA(c.Name + "-ca"); err != nil {
			return err
		}
		serving, err := c.ca.IssueServing("kube-apiserver", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
		if err != nil {
			return err
		}
		saKey, saPub, err := newServiceAccountKey()
		if err != nil {
			return err
		}
		dir := filepath.Join(pki, c.Name)
		if err := writeFiles(dir, map[string][]byte{
			"ca.crt":      c.ca.CertPEM,
			"serving.crt": serving.CertPEM,
			"serving.key": serving.KeyPEM,
			"sa.key":      saKey,
			"sa.pub":      saPub,
		}); err != nil {
			return err
		}
		c.CAFile = filepath.Join(dir, "ca.crt")
		e.clusters = append(e.clusters, c)
	}
	return nil
}

const (
	envDirPrefix = "kilo-mesh-env-"
	ownerFile    = "owner.pid"
)

// sweepStaleDirs removes temporary environment directories left behind by
// test processes that died without cleanup (go test -timeout, SIGKILL):
// those whose owner.pid names a process that no longer exists. Kept
// directories have no owner.pid and stay.
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), envDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			os.RemoveAll(dir)
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func (e *Env) startEtcd(ctx context.Context) error {
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	logs := filepath.Join(e.Dir, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		return err
	}
	e.EtcdURL = client
	e.EtcdLogPath = filepath.Join(logs, "etcd.log")
	e.etcd = newProcess("etcd", e.tools.Etcd, e.EtcdLogPath, []string{
		"--name=default",
		"--data-dir=" + filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--unsafe-no-fsync",
		"--log-level=warn",
	})
	if err := e.etcd.start(); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	return e.etcd.waitFor(ctx, "health", 100*time.Millisecond, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, client+"/health", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
			return fmt.Errorf("etcd /health: %d %s", resp.StatusCode, body)
		}
		return nil
	})
}

func (e *Env) startClusters(ctx context.Context) error {
	ports, err := FreePorts(len(e.clusters))
	if err != nil {
		return err
	}
	pki := filepath.Join(e.Dir, "pki")
	for i, c := range e.clusters {
		c.Port = ports[i]
		c.URL = fmt.Sprintf("https://127.0.0.1:%d", c.Port)
		c.LogPath = filepath.Join(e.Dir, "logs", c.Name+".log")
		dir := filepath.Join(pki, c.Name)
		args := []string{
			"--etcd-servers=" + e.EtcdURL,
			"--etcd-prefix=" + c.EtcdPrefix,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", c.Port),
			"--endpoint-reconciler-type=none",
			"--cert-dir=" + filepath.Join(e.Dir, "certs", c.Name),
			"--tls-cert-file=" + filepath.Join(dir, "serving.crt"),
			"--tls-private-key-file=" + filepath.Join(dir, "serving.key"),
			"--client-ca-file=" + c.CAFile,
			"--token-auth-file=" + filepath.Join(pki, "tokens.csv"),
			"--authorization-mode=Node,RBAC",
			fmt.Sprintf("--service-account-issuer=https://%s.kilo-mesh.test", c.Name),
			"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
			"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
			"--service-cluster-ip-range=" + c.ServiceCIDR,
			"--requestheader-client-ca-file=" + filepath.Join(pki, "front-proxy-ca.crt"),
			"--requestheader-allowed-names=front-proxy-client",
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file=" + filepath.Join(pki, "front-proxy-client.crt"),
			"--proxy-client-key-file=" + filepath.Join(pki, "front-proxy-client.key"),
			"--profiling=false",
			"--v=1",
		}
		args = append(args, e.opts.ExtraAPIServerArgs...)
		c.proc = newProcess("kube-apiserver "+c.Name, e.tools.KubeAPIServer, c.LogPath, args)
	}
	for _, c := range e.clusters {
		if err := c.proc.start(); err != nil {
			return err
		}
	}
	errs := make([]error, len(e.clusters))
	var wg sync.WaitGroup
	for i, c := range e.clusters {
		wg.Go(func() { errs[i] = e.waitClusterReady(ctx, c) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (e *Env) waitClusterReady(ctx context.Context, c *Cluster) error {
	return waitReadyz(ctx, c.proc, e.restConfig(c, UserAdmin), c.URL)
}

// waitReadyz waits until the /readyz of the server at url, run by proc,
// answers 200.
func waitReadyz(ctx context.Context, proc *process, cfg *rest.Config, url string) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	return proc.waitFor(ctx, "/readyz", 200*time.Millisecond, func(ctx context.Context) error {
		return readyz(ctx, hc, url)
	})
}

// readyz asks the server at url once whether it is ready.
func readyz(ctx context.Context, hc *http.Client, url string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %d %s", resp.StatusCode, lastLines(string(body), 5))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// StopCluster stops kube-apiserver i (its data stays in etcd); requests to
// it then fail with connection refused.
func (e *Env) StopCluster(i int) error {
	return e.clusters[i].proc.stop(5 * time.Second)
}

// StartCluster restarts kube-apiserver i, stopped by StopCluster, on the same
// port with the same data, and waits until it is ready.
func (e *Env) StartCluster(ctx context.Context, i int) error {
	c := e.clusters[i]
	if err := c.proc.start(); err != nil {
		return err
	}
	return e.waitClusterReady(ctx, c)
}

// ClusterRunning reports whether kube-apiserver i is running.
func (e *Env) ClusterRunning(i int) bool { return e.clusters[i].proc.running() }

// ClusterPid returns the pid of kube-apiserver i's current run, or 0 if it
// was never started; tests signal it to crash (SIGKILL) or freeze (SIGSTOP)
// a member cluster.
func (e *Env) ClusterPid(i int) int { return e.clusters[i].proc.pid() }
