// Package etcd runs the embedded single-member etcd that stores meshes when
// no external etcd is given, so one replica needs nothing else.
package etcd

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"
)

// readyTimeout bounds the wait for a member that cannot start, e.g. because
// its data directory belongs to another cluster.
const readyTimeout = time.Minute

// Config says where the embedded member keeps its data and listens.
type Config struct {
	// DataDir holds the member's data; it survives restarts.
	DataDir string
	// ClientURL is where the API server's storage connects.
	ClientURL string
	// PeerURL is the member's peer listener; a single member still needs one.
	PeerURL string
}

// Server is a running embedded etcd member.
type Server struct {
	etcd *embed.Etcd
}

// Start starts the member and waits until it serves clients.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	clientURL, err := url.Parse(cfg.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("parsing embedded etcd client URL %q: %w", cfg.ClientURL, err)
	}
	peerURL, err := url.Parse(cfg.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("parsing embedded etcd peer URL %q: %w", cfg.PeerURL, err)
	}
	ec := embed.NewConfig()
	ec.Name = "kilo-mesh-apiserver"
	ec.Dir = cfg.DataDir
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*clientURL}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.LogLevel = "warn"
	// Left zero, etcd logs every request as slow.
	ec.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.DataDir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		klog.InfoS("Embedded etcd is ready", "dataDir", cfg.DataDir, "clientURL", cfg.ClientURL)
		return &Server{etcd: e}, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(readyTimeout):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s not ready after %s", cfg.DataDir, readyTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
}

// Close stops the member, flushing its data.
func (s *Server) Close() {
	s.etcd.Close()
}
