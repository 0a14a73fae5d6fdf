package etcd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("starting embedded etcd in %s: %v", cfg.DataDir, err)
	}
	t.Cleanup(s.Close)
	return s
}

func client(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.ClientURL()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func put(t *testing.T, s *Server, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client(t, s).Put(ctx, key, value); err != nil {
		t.Fatalf("put %s through %s: %v", key, s.ClientURL(), err)
	}
}

func get(t *testing.T, s *Server, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := client(t, s).Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s through %s: %v", key, s.ClientURL(), err)
	}
	if len(r.Kvs) == 0 {
		return ""
	}
	return string(r.Kvs[0].Value)
}

// TestSocketIsPrivate: the member is reached through a socket in its data
// directory, and the directory is made 0700 even if it was open before (as
// a kubelet leaves a volume with an fsGroup).
func TestSocketIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o2775); err != nil {
		t.Fatal(err)
	}
	s := start(t, Config{DataDir: dir})
	if want := "unix://" + filepath.Join(dir, SocketName); s.ClientURL() != want {
		t.Errorf("ClientURL() = %q, want %q", s.ClientURL(), want)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(os.ModePerm|os.ModeSetgid) != 0o700 {
		t.Errorf("data directory mode %v, want drwx------", fi.Mode())
	}
	sock, err := os.Stat(filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	if sock.Mode()&os.ModeSocket == 0 || sock.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want srw-------", sock.Mode())
	}
	put(t, s, "k", "v")
}

// TestTwoMembersOnOneHost: two members in two data directories run side by
// side without sharing anything.
func TestTwoMembersOnOneHost(t *testing.T) {
	a := start(t, Config{DataDir: t.TempDir()})
	b := start(t, Config{DataDir: t.TempDir()})
	put(t, a, "k", "a")
	put(t, b, "k", "b")
	if got := get(t, a, "k"); got != "a" {
		t.Errorf("member a has k=%q, want a", got)
	}
	if got := get(t, b, "k"); got != "b" {
		t.Errorf("member b has k=%q, want b", got)
	}
}

// TestDataDirectoryHeldByAnotherServer: a second member on the same data
// directory neither starts nor takes the running member's socket; it
// starts once the first has stopped, with its data.
func TestDataDirectoryHeldByAnotherServer(t *testing.T) {
	dir := t.TempDir()
	first, err := Start(context.Background(), Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	put(t, first, "k", "kept")

	_, err = Start(context.Background(), Config{DataDir: dir, LockTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("second member on a held data directory: %v, want an error saying it is held", err)
	}
	if got := get(t, first, "k"); got != "kept" {
		t.Fatalf("the first member no longer answers on its socket as before: k=%q", got)
	}

	// A restart that overlaps the old run's shutdown waits for it.
	type result struct {
		s   *Server
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Start(context.Background(), Config{DataDir: dir, LockTimeout: time.Minute})
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("second member started while the first holds the directory (err %v)", r.err)
	case <-time.After(time.Second):
	}
	first.Close()
	r := <-done
	if r.err != nil {
		t.Fatalf("second member after the first stopped: %v", r.err)
	}
	defer r.s.Close()
	if got := get(t, r.s, "k"); got != "kept" {
		t.Errorf("after the handover k=%q, want kept", got)
	}
}

func TestDataDirTooLongForASocket(t *testing.T) {
	dir := "/" + strings.Repeat("d", maxSocketPath)
	if _, err := ClientURL(dir); err == nil || !strings.Contains(err.Error(), "shorter --data-dir") {
		t.Errorf("ClientURL(%d-byte dir) = %v, want an error asking for a shorter --data-dir", len(dir), err)
	}
}
