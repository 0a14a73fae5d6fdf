package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Store names a server's storage as its flags do: the embedded member's
// data directory, or the servers (and TLS files) of an external etcd.
type Store struct {
	DataDir                   string
	Servers                   []string
	CAFile, CertFile, KeyFile string
}

// Embedded reports whether the store is the embedded member's.
func (s Store) Embedded() bool { return len(s.Servers) == 0 }

// Connect returns a client of the store: of the external etcd, or of the
// embedded member a running server holds in DataDir (its socket).
func (s Store) Connect(ctx context.Context) (*clientv3.Client, error) {
	endpoints := s.Servers
	if s.Embedded() {
		url, err := ClientURL(s.DataDir)
		if err != nil {
			return nil, err
		}
		endpoints = []string{url}
	}
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, Context: ctx}
	if s.CAFile != "" || s.CertFile != "" {
		tls, err := (transport.TLSInfo{TrustedCAFile: s.CAFile, CertFile: s.CertFile, KeyFile: s.KeyFile}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the etcd client's TLS files: %w", err)
		}
		cfg.TLS = tls
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd at %v: %w", endpoints, err)
	}
	// clientv3 dials lazily: ask once, so that a wrong address fails here.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Status(sctx, endpoints[0]); err != nil {
		c.Close()
		if s.Embedded() {
			return nil, fmt.Errorf("no server answers on the embedded etcd's socket in %s (is kilo-mesh-apiserver running with this --data-dir?): %w", s.DataDir, err)
		}
		return nil, fmt.Errorf("etcd at %s does not answer: %w", endpoints[0], err)
	}
	return c, nil
}

// ErrDataDirHeld is returned by StartOffline when a server holds the data
// directory.
var ErrDataDirHeld = errors.New("a kilo-mesh-apiserver runs on this data directory")

// StartOffline starts the embedded member in dataDir for a command that
// must have the store to itself: the directory's lock keeps every server
// out until Close, and a server already running there is an error.
func StartOffline(ctx context.Context, dataDir string) (*Server, error) {
	s, err := Start(ctx, Config{DataDir: dataDir, LockTimeout: time.Second})
	if errors.Is(err, errHeld) {
		return nil, fmt.Errorf("%w (%s): stop it first (scale its StatefulSet to 0)", ErrDataDirHeld, dataDir)
	}
	return s, err
}
