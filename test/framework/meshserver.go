package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Names of the mesh API and of the server's objects on the host cluster; they
// match artifacts/deploy.
const (
	MeshGroup          = "mesh.kilo.squat.ai"
	MeshVersion        = "v1alpha1"
	MeshNamespace      = "kilo-mesh-system"
	MeshServiceAccount = "kilo-mesh-apiserver"
	MeshServiceName    = "kilo-mesh-apiserver"
	APIServiceName     = MeshVersion + "." + MeshGroup
	// MeshServingCertSecret holds the self-managed CA and certificate
	// (artifacts/deploy/serving-cert.yaml, --serving-cert-secret).
	MeshServingCertSecret = "kilo-mesh-apiserver-serving-cert"
	// MeshServiceDNSName is the name the aggregator verifies the server's
	// certificate for.
	MeshServiceDNSName = MeshServiceName + "." + MeshNamespace + ".svc"
)

// ClusterMeshGVR is the resource the mesh server serves.
var ClusterMeshGVR = schema.GroupVersionResource{Group: MeshGroup, Version: MeshVersion, Resource: "clustermeshes"}

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// MeshServerOptions configure StartMeshServer.
type MeshServerOptions struct {
	// ExtraArgs are appended to the server's flags.
	ExtraArgs []string
	// ExternalEtcd stores the server's data in the environment's etcd
	// under a unique --etcd-prefix instead of the embedded etcd.
	ExternalEtcd bool
	// Etcd stores the server's data in an etcd cluster of
	// StartEtcdCluster, over TLS with its client certificate, as the HA
	// install does.
	Etcd *EtcdCluster
	// EtcdPrefix is the --etcd-prefix with ExternalEtcd or Etcd (default:
	// a unique one); replicas sharing storage share it.
	EtcdPrefix string
	// ServicePort is the port the Service behind the APIService points
	// at (default Port): another address in front of the server, such as
	// a TCPProxy standing in for a Service over several replicas.
	ServicePort int
	// DataDir is the embedded etcd's data directory (default: a directory
	// in the environment's Dir). Restarts of the MeshServer reuse it.
	DataDir string
	// Port fixes the secure port (0: a free port). Restarts of the
	// MeshServer reuse the same port. The embedded etcd listens on a unix
	// socket in DataDir and needs no port.
	Port int
	// SkipRegistration does not create the Service and APIService (for a
	// second server that only shares storage with the registered one).
	SkipRegistration bool
	// SelfManagedCert starts the server without certificate flags, as the
	// default install does: it makes its own CA and certificate in the
	// Secret MeshServingCertSecret, and the APIService is registered
	// without a caBundle for the server to fill in.
	SelfManagedCert bool
	// Binary overrides the kilo-mesh-apiserver binary (default:
	// MeshServerBinary).
	Binary string
	// MemberServerCIDRs is the server's --member-server-cidrs (default:
	// LoopbackServers, where the environment's clusters listen, which the
	// server must be allowed to dial: by default it dials public addresses only).
	MemberServerCIDRs []string
	// PrivateHosts runs the server with an /etc/hosts of its own, which
	// MeshServer.SetHosts writes (needs root; see inPrivateHosts).
	PrivateHosts bool
}

// MeshServer is a running kilo-mesh-apiserver process.
type MeshServer struct {
	// Port is the secure port on 127.0.0.1; URL is https://127.0.0.1:<port>.
	Port int
	URL  string
	// DataDir is the embedded etcd's data directory ("" with ExternalEtcd).
	DataDir string
	// EtcdPrefix is the --etcd-prefix with ExternalEtcd or Etcd.
	EtcdPrefix string
	// ServicePort is where the APIService's Service sends the aggregator.
	ServicePort int
	// LogPath is the server's stdout and stderr.
	LogPath string
	// Kubeconfig is the server's own identity on the host cluster (the
	// ServiceAccount kilo-mesh-apiserver/kilo-mesh-system).
	Kubeconfig string
	// CABundle is the CA of the serving certificate, as in the APIService.
	CABundle []byte
	// Args are the flags the server runs with.
	Args []string
	// Registered tells whether this server is behind the APIService.
	Registered bool
	// SelfManagedCert tells whether the server makes its own certificate;
	// CABundle then follows the Secret (see WaitReady).
	SelfManagedCert bool
	// HostsPath is the server's /etc/hosts with PrivateHosts.
	HostsPath string

	env  *Env
	proc *process
}

// IssueMeshServingCert issues a serving certificate for the server's
// Service from the CA that StartMeshServer puts into the APIService's
// caBundle (without SelfManagedCert): what cert-manager's renewal of the
// Certificate of the cert-manager installs hands the server.
func (e *Env) IssueMeshServingCert() (*KeyPair, error) {
	return e.meshCA.IssueServing("kilo-mesh-apiserver", MeshServiceDNSName, MeshServiceDNSName+".cluster.local")
}

// StartMeshServer installs the server's RBAC from artifacts/deploy, runs
// kilo-mesh-apiserver as the ServiceAccount kilo-mesh-apiserver of the host
// cluster, waits for its /readyz, registers it through the aggregation layer
// (ExternalName Service to localhost plus APIService with caBundle) and waits
// until the aggregation layer serves the group (WaitAvailable).
func (e *Env) StartMeshServer(ctx context.Context, opts MeshServerOptions) (*MeshServer, error) {
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = MeshServerBinary(ctx); err != nil {
			return nil, err
		}
	}
	if err := e.InstallServerRBAC(ctx); err != nil {
		return nil, fmt.Errorf("installing server RBAC: %w", err)
	}
	token, err := e.ServiceAccountToken(ctx, HostCluster, MeshNamespace, MeshServiceAccount, 24*time.Hour)
	if err != nil {
		return nil, err
	}

	e.mu.Lock()
	n := e.meshStarts
	e.meshStarts++
	e.mu.Unlock()
	dir := filepath.Join(e.Dir, fmt.Sprintf("mesh-%d", n))
	serving, err := e.IssueMeshServingCert()
	if err != nil {
		return nil, err
	}
	kubeconfig, err := e.KubeconfigFor(HostCluster, MeshServiceAccount, token)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(dir, map[string][]byte{
		"tls.crt":    serving.CertPEM,
		"tls.key":    serving.KeyPEM,
		"ca.crt":     e.meshCA.CertPEM,
		"kubeconfig": kubeconfig,
	}); err != nil {
		return nil, err
	}

	port := opts.Port
	if port == 0 {
		ports, err := FreePorts(1)
		if err != nil {
			return nil, err
		}
		port = ports[0]
	}
	m := &MeshServer{
		Port:            port,
		LogPath:         filepath.Join(e.Dir, "logs", fmt.Sprintf("kilo-mesh-apiserver-%d.log", n)),
		Kubeconfig:      filepath.Join(dir, "kubeconfig"),
		CABundle:        e.meshCA.CertPEM,
		SelfManagedCert: opts.SelfManagedCert,
		env:             e,
	}
	m.URL = fmt.Sprintf("https://127.0.0.1:%d", m.Port)
	args := []string{
		fmt.Sprintf("--secure-port=%d", m.Port),
		"--bind-address=127.0.0.1",
		"--kubeconfig=" + m.Kubeconfig,
		"--authentication-kubeconfig=" + m.Kubeconfig,
		"--authorization-kubeconfig=" + m.Kubeconfig,
	}
	if opts.SelfManagedCert {
		m.CABundle = nil
	} else {
		args = append(args,
			"--tls-cert-file="+filepath.Join(dir, "tls.crt"),
			"--tls-private-key-file="+filepath.Join(dir, "tls.key"))
	}
	m.ServicePort = opts.ServicePort
	if m.ServicePort == 0 {
		m.ServicePort = m.Port
	}
	if opts.ExternalEtcd || opts.Etcd != nil {
		m.EtcdPrefix = opts.EtcdPrefix
		if m.EtcdPrefix == "" {
			m.EtcdPrefix = "/" + UniqueName("kilo-mesh")
		}
		args = append(args, "--etcd-prefix="+m.EtcdPrefix)
	}
	if c := opts.Etcd; c != nil {
		args = append(args, "--etcd-servers="+strings.Join(c.Endpoints, ","),
			"--etcd-cafile="+c.CAFile, "--etcd-certfile="+c.ClientCertFile, "--etcd-keyfile="+c.ClientKeyFile)
	} else if opts.ExternalEtcd {
		args = append(args, "--etcd-servers="+e.EtcdURL)
	} else {
		m.DataDir = opts.DataDir
		if m.DataDir == "" {
			m.DataDir = filepath.Join(dir, "data")
		}
		if err := os.MkdirAll(m.DataDir, 0o700); err != nil {
			return nil, err
		}
		args = append(args, "--data-dir="+m.DataDir)
	}
	cidrs := opts.MemberServerCIDRs
	if cidrs == nil {
		cidrs = LoopbackServers
	}
	args = append(args, "--member-server-cidrs="+strings.Join(cidrs, ","))
	m.Args = append(args, opts.ExtraArgs...)
	path, procArgs := bin, m.Args
	if opts.PrivateHosts {
		m.HostsPath = filepath.Join(dir, "hosts")
		if err := m.SetHosts(); err != nil {
			return nil, err
		}
		if path, procArgs, err = inPrivateHosts(m.HostsPath, bin, m.Args); err != nil {
			return nil, err
		}
	}
	m.proc = newProcess(fmt.Sprintf("kilo-mesh-apiserver-%d", n), path, m.LogPath, procArgs)

	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, fmt.Errorf("environment is stopped")
	}
	e.meshServers = append(e.meshServers, m)
	e.mu.Unlock()

	if err := m.proc.start(); err != nil {
		return nil, err
	}
	if err := m.WaitReady(ctx); err != nil {
		return m, err
	}
	if !opts.SkipRegistration {
		if err := m.register(ctx); err != nil {
			return m, err
		}
		m.Registered = true
		if err := m.WaitAvailable(ctx); err != nil {
			return m, err
		}
	}
	return m, nil
}

// StartMeshServerT is StartMeshServer failing the test on error (with the
// server's log tail). The environment's Stop stops the server.
func (e *Env) StartMeshServerT(t testing.TB, opts MeshServerOptions) *MeshServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	m, err := e.StartMeshServer(ctx, opts)
	if err != nil {
		if m != nil {
			t.Fatalf("starting kilo-mesh-apiserver: %v\nlast lines of %s:\n%s", err, m.LogPath, tailFile(m.LogPath, 60))
		}
		t.Fatalf("starting kilo-mesh-apiserver: %v", err)
	}
	return m
}

// DirectRESTConfig returns a client configuration that talks to the server
// itself, bypassing the aggregator; the server authenticates user's token
// with a TokenReview against the host cluster.
func (m *MeshServer) DirectRESTConfig(user string) *rest.Config {
	return &rest.Config{
		Host:        m.URL,
		BearerToken: m.env.Token(user),
		// The name the aggregator checks too; both kinds of certificate
		// carry it.
		TLSClientConfig: rest.TLSClientConfig{CAData: m.CABundle, ServerName: MeshServiceDNSName},
		QPS:             100,
		Burst:           200,
		Timeout:         30 * time.Second,
	}
}

// ShutdownBound is how long the server may take to exit after SIGTERM: the
// shortest terminationGracePeriodSeconds of the installs (the HA replicas'),
// after which a pod is killed and its store not closed.
const ShutdownBound = 30 * time.Second

// Stop stops the server with SIGTERM. It fails when the server has not exited
// within ShutdownBound, with what held it (the server is killed then); the
// environment's Stop reports that failure again, so that it fails the test
// even where the caller dropped the error. The data dir, ports and
// registration stay for Start.
func (m *MeshServer) Stop() error {
	err := m.proc.stopWithin(ShutdownBound)
	if err != nil {
		m.env.recordStopFailure(err)
	}
	return err
}

// Terminate stops the server as the kubelet ends its pod: SIGTERM, then
// SIGKILL after grace, without failing a slow stop. It is for an earlier
// release's binary, whose stop this code base cannot mend.
func (m *MeshServer) Terminate(grace time.Duration) error { return m.proc.stop(grace) }

// Kill stops the server with SIGKILL.
func (m *MeshServer) Kill() error { return m.proc.stop(0) }

// Start restarts a stopped server with the same flags (data dir, ports) and
// waits until it is ready and, if registered, served through the
// aggregation layer again (WaitAvailable).
func (m *MeshServer) Start(ctx context.Context) error {
	if err := m.proc.start(); err != nil {
		return err
	}
	if err := m.WaitReady(ctx); err != nil {
		return err
	}
	if !m.Registered {
		return nil
	}
	if err := m.register(ctx); err != nil {
		return err
	}
	return m.WaitAvailable(ctx)
}

// Running reports whether the server process is running.
func (m *MeshServer) Running() bool { return m.proc.running() }

// ExitErr is how the last run of the server ended once it has exited: nil
// for exit status 0.
func (m *MeshServer) ExitErr() error { return m.proc.exitErr() }

// Exited returns a channel closed when the current run of the server exits.
func (m *MeshServer) Exited() <-chan struct{} { return m.proc.exited() }

// Pid returns the process id of the current run (0 if never started).
func (m *MeshServer) Pid() int { return m.proc.pid() }

// Logs returns the server's log so far.
func (m *MeshServer) Logs() string {
	data, err := os.ReadFile(m.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", m.LogPath, err)
	}
	return string(data)
}

// LogTail returns the last n lines of the server's log.
func (m *MeshServer) LogTail(n int) string { return tailFile(m.LogPath, n) }

// LogContains reports whether the server's log contains s.
func (m *MeshServer) LogContains(s string) bool { return strings.Contains(m.Logs(), s) }
