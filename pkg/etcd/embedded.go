// Package etcd runs the embedded single-member etcd that stores meshes when
// no external etcd is given, so one replica needs nothing else.
//
// The member listens on a unix socket inside its data directory, which is
// kept at mode 0700: only the server's own user (and root) can open it, so no
// other local process can write around the API server's admission, and two
// servers on one host never compete for a port. A single member needs no
// peer listener, so it has none.
package etcd

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"
)

// readyTimeout bounds the wait for a member that cannot start, e.g. because
// its data directory belongs to another cluster, and the wait for a data
// directory another process still holds.
const readyTimeout = time.Minute

// SocketName is the file name of the client socket in the data directory.
const SocketName = "etcd.sock"

// maxSocketPath is the longest path a unix socket may have on Linux
// (sun_path is 108 bytes, the last one NUL).
const maxSocketPath = 107

// unusedPeerURL is what the member advertises as its peer URL: etcd needs
// one to name the member of a new cluster, but nothing listens there and a
// single member never dials it.
const unusedPeerURL = "http://localhost:0"

// Config says where the embedded member keeps its data.
type Config struct {
	// DataDir holds the member's data and its client socket; it survives
	// restarts. It is created if missing and kept at mode 0700.
	DataDir string
	// LockTimeout bounds the wait for a data directory another process
	// holds (default one minute).
	LockTimeout time.Duration
	// QuotaBytes is the member's space quota (default DefaultQuotaBytes).
	QuotaBytes int64
}

// DefaultQuotaBytes is the embedded member's space quota: half the default
// install's 1 GiB volume, which also holds etcd's write-ahead log and
// snapshots, so that etcd refuses writes (and says so) before the volume
// is full.
const DefaultQuotaBytes = 512 << 20

// Server is a running embedded etcd member.
type Server struct {
	etcd      *embed.Etcd
	lock      *dirLock
	clientURL string
	closeOnce sync.Once
}

// SocketPath returns the client socket of the member that keeps its data in dataDir.
func SocketPath(dataDir string) (string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("resolving the data directory %q: %w", dataDir, err)
	}
	p := filepath.Join(abs, SocketName)
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("the embedded etcd's socket %s is longer than the %d bytes a unix socket path may have: choose a shorter --data-dir", p, maxSocketPath)
	}
	return p, nil
}

// ClientURL returns the client endpoint of the member that keeps its data
// in dataDir: unix:///<data-dir>/etcd.sock.
func ClientURL(dataDir string) (string, error) {
	socket, err := SocketPath(dataDir)
	if err != nil {
		return "", err
	}
	return (&url.URL{Scheme: "unix", Path: socket}).String(), nil
}

// Start locks the data directory, starts the member and waits until it
// serves clients. While another process holds the data directory (a
// previous run still shutting down), it waits up to cfg.LockTimeout.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	socket, err := SocketPath(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(socket)
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	timeout := cfg.LockTimeout
	if timeout == 0 {
		timeout = readyTimeout
	}
	lock, err := lockDir(ctx, dir, timeout)
	if err != nil {
		return nil, err
	}
	// Holding the lock, a socket file left by a killed run is stale; etcd
	// replaces it.
	clientURL := url.URL{Scheme: "unix", Path: socket}
	ec := embed.NewConfig()
	ec.Name = "kilo-mesh-apiserver"
	ec.Dir = dir
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.ListenPeerUrls = nil
	ec.ListenClientHttpUrls = nil
	// etcd insists on host:port advertise URLs; a single member never
	// dials them, and clients here only use the socket.
	unused, _ := url.Parse(unusedPeerURL)
	ec.AdvertiseClientUrls = []url.URL{*unused}
	ec.AdvertisePeerUrls = []url.URL{*unused}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.LogLevel = "warn"
	ec.QuotaBackendBytes = cfg.QuotaBytes
	if ec.QuotaBackendBytes == 0 {
		ec.QuotaBackendBytes = DefaultQuotaBytes
	}
	// Left zero, etcd logs every request as slow.
	ec.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	e, err := embed.StartEtcd(ec)
	if err != nil {
		lock.release()
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", dir, err)
	}
	fail := func(err error) (*Server, error) {
		e.Close()
		lock.release()
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return fail(fmt.Errorf("embedded etcd failed: %w", err))
	case <-time.After(readyTimeout):
		return fail(fmt.Errorf("embedded etcd in %s not ready after %s", dir, readyTimeout))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	// The directory already keeps others out; the socket's own mode says
	// the same to whoever looks.
	if err := os.Chmod(socket, 0o600); err != nil {
		return fail(fmt.Errorf("restricting the embedded etcd's socket: %w", err))
	}
	klog.InfoS("Embedded etcd is ready", "dataDir", dir, "socket", socket)
	return &Server{etcd: e, lock: lock, clientURL: clientURL.String()}, nil
}

// ClientURL is the member's client endpoint, unix:///<data-dir>/etcd.sock.
func (s *Server) ClientURL() string { return s.clientURL }

// Close stops the member, flushing its data, and releases the data
// directory. Later calls do nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.etcd.Close()
		s.lock.release()
	})
}

// privateDir creates dir if needed and makes it mode 0700, owned by this
// process's user: the socket inside is then closed to every other user. A
// volume mounted with an fsGroup gets group bits added by the kubelet; they
// are taken away again here.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("checking the data directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the data directory %s is not a directory", dir)
	}
	if err := checkOwner(fi); err != nil {
		return fmt.Errorf("the data directory %s: %w", dir, err)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("making the data directory %s private (mode 0700): %w", dir, err)
		}
	}
	return nil
}
