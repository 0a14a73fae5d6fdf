// Package framework starts real Kubernetes control planes on loopback for the
// e2e tests of kilo-mesh-apiserver and for `make run`: one etcd process, N
// kube-apiservers sharing it under different prefixes (cluster 0 is the host
// cluster that serves the aggregated mesh.kilo.squat.ai API; clusters 1..N-1
// are member clusters), a throwaway PKI, static-token users with RBAC, the
// Kilo Peer CRD on every cluster, and the kilo-mesh-apiserver itself
// registered through the aggregation layer (see StartMeshServer).
//
// Every cluster also runs kube-controller-manager with all its controllers,
// as a real cluster does: namespaces finish deleting, the garbage collector
// honours owner references, ClusterRoles aggregate.
//
// Binaries come from hack/build-tools.sh (see ToolsBinDir).
package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	// ExtraControllerManagerArgs are appended to every
	// kube-controller-manager's flags.
	ExtraControllerManagerArgs []string
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
	// ControllerManagerLogPath is kube-controller-manager's log.
	ControllerManagerLogPath string

	ca          *CA
	proc        *process
	controllers *process
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
	// etcdClusters are those of StartEtcdCluster.
	etcdClusters []*EtcdCluster
	// meshStarts numbers StartMeshServer calls, so that concurrent ones
	// get directories and logs of their own.
	meshStarts int
	stopped    bool
	// stopFailures are the mesh servers' stops that failed (MeshServer.Stop),
	// reported again by Stop.
	stopFailures []error
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
	if err := e.startControllerManagers(); err != nil {
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
	if err := e.waitControllerManagers(ctx); err != nil {
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

func (e *Env) recordStopFailure(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopFailures = append(e.stopFailures, err)
}

func (e *Env) stopFailed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.stopFailures) > 0
}

// Stop stops every process the environment started (mesh servers first,
// then kube-controller-managers, kube-apiservers, then etcd) and removes Dir
// unless kept or a mesh server's stop failed. It is
// idempotent. It fails if any mesh server, now or in an earlier
// MeshServer.Stop, did not exit within ShutdownBound of SIGTERM.
func (e *Env) Stop() error {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil
	}
	e.stopped = true
	servers := slices.Clone(e.meshServers)
	etcdClusters := slices.Clone(e.etcdClusters)
	e.mu.Unlock()

	for _, m := range servers {
		_ = m.Stop()
	}
	e.mu.Lock()
	errs := slices.Clone(e.stopFailures)
	e.mu.Unlock()
	for _, c := range etcdClusters {
		if err := c.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, e.stopControllerManagers()...)
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
	} else if e.stopFailed() {
		// The whole goroutine dump of a server that held SIGTERM is in its log there.
		os.Remove(filepath.Join(e.Dir, ownerFile))
		e.log("kept environment dir %s: a mesh server did not stop in time", e.Dir)
	} else if e.opts.Dir == "" {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
