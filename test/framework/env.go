// Package framework starts real Kubernetes control planes on loopback for the
// e2e tests of kilo-mesh-apiserver and for `make run`: one etcd process, N
// kube-apiservers sharing it under different prefixes (cluster 0 is the host
// cluster that serves the aggregated mesh.kilo.squat.ai API; clusters 1..N-1
// are member clusters), a throwaway PKI, static-token users with RBAC, the
// Kilo Peer CRD on every cluster, and the kilo-mesh-apiserver itself
// registered through the aggregation layer (see StartMeshServer).
//
// No kube-controller-manager runs: namespaces never finish deleting, garbage
// collection of owner references does not happen, and ClusterRole aggregation
// is emulated by Env.AggregateClusterRoles.
//
// Binaries come from hack/build-tools.sh (see ToolsBinDir).
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Users present on every cluster (static tokens).
const (
	UserAdmin   = "admin"    // group system:masters
	UserTenantA = "tenant-a" // edit in namespace tenant-a of the host cluster
	UserTenantB = "tenant-b" // edit in namespace tenant-b of the host cluster
	UserViewerA = "viewer-a" // view in namespace tenant-a of the host cluster

	NamespaceTenantA = "tenant-a"
	NamespaceTenantB = "tenant-b"

	// GroupTenants and GroupViewers are the ordinary groups of the tenant
	// users; no binding refers to them by default.
	GroupTenants = "kilo-mesh:tenants"
	GroupViewers = "kilo-mesh:viewers"

	// HostCluster is the index of the cluster that hosts the APIService.
	HostCluster = 0
)

// PeerCRDEnv names an environment variable overriding the path of the Kilo
// Peer CRD manifest (default: artifacts/crds/kilo.squat.ai_peers.yaml).
const PeerCRDEnv = "KILO_MESH_PEER_CRD"

// KeepEnv names an environment variable: if set to a non-empty value, Stop
// keeps the environment's directory (logs, kubeconfigs, PKI) for inspection.
const KeepEnv = "KILO_MESH_KEEP_ENV"

// User is a static-token user present on every cluster.
type User struct {
	Name   string
	Groups []string
}

// DefaultUsers are the users every environment has.
var DefaultUsers = []User{
	{Name: UserAdmin, Groups: []string{"system:masters"}},
	{Name: UserTenantA, Groups: []string{GroupTenants}},
	{Name: UserTenantB, Groups: []string{GroupTenants}},
	{Name: UserViewerA, Groups: []string{GroupViewers}},
}

// Options configure Start.
type Options struct {
	// Clusters is the number of kube-apiservers (default 2). Cluster 0 is
	// the host cluster.
	Clusters int
	// Dir is the working directory (PKI, logs, kubeconfigs, etcd data).
	// Default: a new temporary directory, removed by Stop.
	Dir string
	// KeepDir keeps Dir on Stop (also when $KILO_MESH_KEEP_ENV is set).
	KeepDir bool
	// ToolsDir overrides ToolsBinDir().
	ToolsDir string
	// PeerCRDPath overrides the Kilo Peer CRD manifest; see PeerCRDEnv.
	PeerCRDPath string
	// SkipPeerCRD does not install the Peer CRD.
	SkipPeerCRD bool
	// Users are added to DefaultUsers on every cluster.
	Users []User
	// ServiceCIDRs sets cluster i's --service-cluster-ip-range to
	// ServiceCIDRs[i] (default: 10.(96+i).0.0/16).
	ServiceCIDRs []string
	// ExtraAPIServerArgs are appended to every kube-apiserver's flags.
	ExtraAPIServerArgs []string
	// Logf receives progress messages (default: discarded).
	Logf func(format string, args ...any)
}

// Cluster is one kube-apiserver.
type Cluster struct {
	Index int
	// Name is "cluster-<index>".
	Name string
	// Port is the secure port on 127.0.0.1; it stays the same across
	// StopCluster/StartCluster.
	Port int
	// URL is https://127.0.0.1:<port>.
	URL string
	// ServiceCIDR is the --service-cluster-ip-range, distinct per cluster
	// (Options.ServiceCIDRs, default 10.(96+index).0.0/16).
	ServiceCIDR string
	// EtcdPrefix is the cluster's --etcd-prefix in the shared etcd.
	EtcdPrefix string
	// CAFile is the cluster CA (serving and client certificates).
	CAFile string
	// LogPath is kube-apiserver's log.
	LogPath string

	ca   *CA
	proc *process
}

// Env is a running environment. All methods are safe for concurrent use.
type Env struct {
	// Dir holds PKI, logs, kubeconfigs and etcd data.
	Dir string
	// EtcdURL is the shared etcd's client URL.
	EtcdURL string
	// EtcdLogPath is etcd's log.
	EtcdLogPath string

	opts     Options
	tools    Tools
	etcd     *process
	clusters []*Cluster
	users    []User
	tokens   map[string]string
	logf     atomic.Pointer[func(string, ...any)]

	frontProxyCA *CA
	meshCA       *CA

	mu          sync.Mutex
	meshServers []*MeshServer
	// meshStarts numbers StartMeshServer calls, so that concurrent ones
	// get directories and logs of their own.
	meshStarts int
	stopped    bool
}

// Start brings up etcd and opts.Clusters kube-apiservers, writes kubeconfigs,
// installs the Peer CRD everywhere and the tenant namespaces and bindings on
// the host cluster. ctx bounds the start only: the processes run until Stop.
// On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Clusters == 0 {
		opts.Clusters = 2
	}
	if opts.Clusters < 1 {
		return nil, fmt.Errorf("Options.Clusters must be at least 1, got %d", opts.Clusters)
	}
	tools, err := FindTools(opts.ToolsDir)
	if err != nil {
		return nil, err
	}
	e := &Env{opts: opts, tools: tools, tokens: map[string]string{}}
	e.setLogf(opts.Logf)
	if opts.Dir == "" {
		sweepStaleDirs()
		if e.Dir, err = os.MkdirTemp("", envDirPrefix); err != nil {
			return nil, err
		}
		// Marks the directory as owned by this process until Stop; see
		// sweepStaleDirs.
		if err := os.WriteFile(filepath.Join(e.Dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return nil, err
		}
	} else {
		e.Dir = opts.Dir
		if err := os.MkdirAll(e.Dir, 0o700); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			if stopErr := e.Stop(); stopErr != nil {
				err = fmt.Errorf("%w (stopping: %v)", err, stopErr)
			}
		}
	}()
	start := time.Now()

	e.users = append(slices.Clone(DefaultUsers), opts.Users...)
	if err := e.writePKI(); err != nil {
		return nil, fmt.Errorf("generating PKI: %w", err)
	}
	if err := e.startEtcd(ctx); err != nil {
		return nil, err
	}
	e.log("etcd ready at %s (%s)", e.EtcdURL, time.Since(start).Round(time.Millisecond))
	if err := e.startClusters(ctx); err != nil {
		return nil, err
	}
	e.log("%d kube-apiservers ready (%s)", len(e.clusters), time.Since(start).Round(time.Millisecond))
	if err := e.writeKubeconfigs(); err != nil {
		return nil, err
	}
	if !opts.SkipPeerCRD {
		if err := e.installPeerCRD(ctx); err != nil {
			return nil, err
		}
	}
	if err := e.setupTenants(ctx); err != nil {
		return nil, err
	}
	e.log("environment ready in %s, dir %s", time.Since(start).Round(time.Millisecond), e.Dir)
	return e, nil
}

// StartT starts an environment for a test: it fails the test on error,
// stops everything in t.Cleanup (which also runs when the test panics or
// fails), and on failure logs where the process logs are.
func StartT(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting test environment: %v", err)
	}
	// Stop logging through t once the test is over (t.Logf after the test
	// returned panics).
	t.Cleanup(func() {
		if t.Failed() {
			env.logFailureInfo(t)
		}
		env.setLogf(nil)
		if err := env.Stop(); err != nil {
			t.Errorf("stopping test environment: %v", err)
		}
	})
	return env
}

func (e *Env) setLogf(f func(string, ...any)) {
	if f == nil {
		f = func(string, ...any) {}
	}
	e.logf.Store(&f)
}

// log writes a progress message through Options.Logf.
func (e *Env) log(format string, args ...any) {
	if f := e.logf.Load(); f != nil {
		(*f)(format, args...)
	}
}

func (e *Env) logFailureInfo(t testing.TB) {
	if e.opts.KeepDir || os.Getenv(KeepEnv) != "" {
		t.Logf("environment dir %s (kept)", e.Dir)
	} else {
		t.Logf("environment dir %s (set %s=1 to keep it)", e.Dir, KeepEnv)
	}
	e.mu.Lock()
	servers := slices.Clone(e.meshServers)
	e.mu.Unlock()
	for _, m := range servers {
		t.Logf("kilo-mesh-apiserver log %s, last lines:\n%s", m.LogPath, tailFile(m.LogPath, 60))
	}
}

// Stop stops every process the environment started (mesh servers first,
// then kube-apiservers, then etcd) and removes Dir unless kept. It is
// idempotent.
func (e *Env) Stop() error {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil
	}
	e.stopped = true
	servers := slices.Clone(e.meshServers)
	e.mu.Unlock()

	var errs []error
	for _, m := range servers {
		if err := m.proc.stop(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	// The clusters' data is thrown away: no need for a graceful shutdown.
	var wg sync.WaitGroup
	var errMu sync.Mutex
	for _, c := range e.clusters {
		if c.proc == nil {
			continue
		}
		wg.Go(func() {
			if err := c.proc.stop(0); err != nil {
				errMu.Lock()
				errs = append(errs, err)
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	if e.etcd != nil {
		if err := e.etcd.stop(0); err != nil {
			errs = append(errs, err)
		}
	}
	if e.opts.KeepDir || os.Getenv(KeepEnv) != "" {
		os.Remove(filepath.Join(e.Dir, ownerFile))
		e.log("kept environment dir %s", e.Dir)
	} else if e.opts.Dir == "" {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

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

// NumClusters returns the number of clusters.
func (e *Env) NumClusters() int { return len(e.clusters) }

// Cluster returns cluster i; it panics if i is out of range.
func (e *Env) Cluster(i int) *Cluster { return e.clusters[i] }

// Users returns every user name known to the clusters.
func (e *Env) Users() []string {
	names := make([]string, 0, len(e.users))
	for _, u := range e.users {
		names = append(names, u.Name)
	}
	return names
}

// Token returns the static bearer token of user; it panics for an unknown user.
func (e *Env) Token(user string) string {
	t, ok := e.tokens[user]
	if !ok {
		panic(fmt.Sprintf("framework: unknown user %q (known: %v)", user, e.Users()))
	}
	return t
}

func (e *Env) restConfig(c *Cluster, user string) *rest.Config {
	return &rest.Config{
		Host:            c.URL,
		BearerToken:     e.Token(user),
		TLSClientConfig: rest.TLSClientConfig{CAData: c.ca.CertPEM},
		QPS:             100,
		Burst:           200,
		Timeout:         30 * time.Second,
		UserAgent:       "kilo-mesh-e2e/" + user,
	}
}

// RESTConfig returns a client configuration for user on cluster i.
func (e *Env) RESTConfig(cluster int, user string) *rest.Config {
	return e.restConfig(e.clusters[cluster], user)
}

// Client returns a typed clientset for user on cluster i.
func (e *Env) Client(cluster int, user string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(e.RESTConfig(cluster, user))
}

// Dynamic returns a dynamic client for user on cluster i.
func (e *Env) Dynamic(cluster int, user string) dynamic.Interface {
	return dynamic.NewForConfigOrDie(e.RESTConfig(cluster, user))
}

// KubeconfigFor builds a self-contained kubeconfig (CA embedded) for a
// bearer token on cluster i; it suits a Secret as well as a file.
func (e *Env) KubeconfigFor(cluster int, contextUser, token string) ([]byte, error) {
	c := e.clusters[cluster]
	name := c.Name + "-" + contextUser
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.ca.CertPEM}
	cfg.AuthInfos[contextUser] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: contextUser, Namespace: "default"}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}

// KubeconfigBytes returns the content of Kubeconfig(cluster, user).
func (e *Env) KubeconfigBytes(cluster int, user string) []byte {
	data, err := e.KubeconfigFor(cluster, user, e.Token(user))
	if err != nil {
		panic(err)
	}
	return data
}

// Kubeconfig returns the path of a kubeconfig file for user on cluster i.
func (e *Env) Kubeconfig(cluster int, user string) string {
	e.Token(user) // panics on unknown users
	return filepath.Join(e.Dir, "kubeconfigs", fmt.Sprintf("%s-%s.yaml", e.clusters[cluster].Name, user))
}

func (e *Env) writeKubeconfigs() error {
	dir := filepath.Join(e.Dir, "kubeconfigs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for i := range e.clusters {
		for _, u := range e.users {
			data, err := e.KubeconfigFor(i, u.Name, e.tokens[u.Name])
			if err != nil {
				return err
			}
			if err := os.WriteFile(e.Kubeconfig(i, u.Name), data, 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// Kubectl runs the real kubectl (from the tools directory) as user on
// cluster i and returns its stdout and stderr. The error includes stderr.
func (e *Env) Kubectl(ctx context.Context, cluster int, user string, args ...string) (stdout, stderr string, err error) {
	return e.KubectlWithInput(ctx, nil, cluster, user, args...)
}

// KubectlWithInput is Kubectl with stdin (for `apply -f -`).
func (e *Env) KubectlWithInput(ctx context.Context, stdin io.Reader, cluster int, user string, args ...string) (stdout, stderr string, err error) {
	return runCommand(ctx, stdin, e.kubectlEnv(e.Kubeconfig(cluster, user)), e.tools.Kubectl, args...)
}

// KubectlPath returns the path of the kubectl binary the framework uses.
func (e *Env) KubectlPath() string { return e.tools.Kubectl }

// kubectlEnv isolates kubectl from the developer's own configuration: its
// HOME (discovery cache, ~/.kube/config) lives in the environment dir.
func (e *Env) kubectlEnv(kubeconfig string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "KUBECONFIG="+kubeconfig, "HOME="+filepath.Join(e.Dir, "home"))
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

// UniqueName returns prefix followed by a random suffix, a valid DNS label
// if prefix is one of at most 56 characters.
func UniqueName(prefix string) string {
	return prefix + "-" + randomHex(3)
}

// NewNamespace creates a namespace with a fresh name (prefix-<random>) on
// the host cluster and returns its name. Namespaces are never deleted (no
// namespace controller runs), so tests use fresh names instead.
func (e *Env) NewNamespace(ctx context.Context, prefix string) (string, error) {
	return e.NewNamespaceOn(ctx, HostCluster, prefix)
}

// NewNamespaceOn is NewNamespace on cluster i.
func (e *Env) NewNamespaceOn(ctx context.Context, cluster int, prefix string) (string, error) {
	client := e.Client(cluster, UserAdmin)
	for range 5 {
		name := UniqueName(prefix)
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("could not find a free namespace name for prefix %q", prefix)
}

// GrantNamespaceRole binds ClusterRole clusterRole to user in namespace ns of
// cluster i and waits until RBAC answers accordingly.
func (e *Env) GrantNamespaceRole(ctx context.Context, cluster int, ns, user, clusterRole string) error {
	client := e.Client(cluster, UserAdmin)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + clusterRole, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Wait until the binding is in kube-apiserver's RBAC cache: probe with a
	// verb the role grants.
	var probe authorizationv1.ResourceAttributes
	switch clusterRole {
	case "view":
		probe = authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "configmaps"}
	case "edit", "admin":
		probe = authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "configmaps"}
	default:
		return nil
	}
	return e.waitAllowed(ctx, cluster, user, probe)
}

// Can reports whether user may perform the action on cluster i, as answered
// by a SelfSubjectAccessReview made as that user.
func (e *Env) Can(ctx context.Context, cluster int, user string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	res, err := e.Client(cluster, user).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}

func (e *Env) waitAllowed(ctx context.Context, cluster int, user string, attrs authorizationv1.ResourceAttributes) error {
	return poll(ctx, 50*time.Millisecond, 30*time.Second, func(ctx context.Context) error {
		ok, err := e.Can(ctx, cluster, user, attrs)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s may not %s %s in %q yet", user, attrs.Verb, attrs.Resource, attrs.Namespace)
		}
		return nil
	})
}

// setupTenants creates the tenant namespaces and bindings on the host
// cluster, and fills the aggregated ClusterRoles (admin, edit, view) that
// kube-controller-manager would normally fill.
func (e *Env) setupTenants(ctx context.Context) error {
	for i := range e.clusters {
		if err := e.AggregateClusterRoles(ctx, i); err != nil {
			return fmt.Errorf("aggregating ClusterRoles on cluster %d: %w", i, err)
		}
	}
	client := e.Client(HostCluster, UserAdmin)
	for _, ns := range []string{NamespaceTenantA, NamespaceTenantB} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, b := range []struct{ ns, user, role string }{
		{NamespaceTenantA, UserTenantA, "edit"},
		{NamespaceTenantB, UserTenantB, "edit"},
		{NamespaceTenantA, UserViewerA, "view"},
	} {
		if err := e.GrantNamespaceRole(ctx, HostCluster, b.ns, b.user, b.role); err != nil {
			return fmt.Errorf("binding %s to %s in %s: %w", b.user, b.role, b.ns, err)
		}
	}
	return nil
}
