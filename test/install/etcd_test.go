//go:build e2e

package install

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// listeningTCPPorts returns the TCP ports process pid listens on: the
// sockets among its file descriptors that /proc/net/tcp{,6} lists as
// listening.
func listeningTCPPorts(t *testing.T, pid int) []int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			ports = append(ports, int(port))
		}
		f.Close()
	}
	return ports
}

// TestEmbeddedEtcdOnAPrivateSocket: with the embedded etcd, the server's
// only TCP listener is its secure port (no etcd client or peer port that
// could collide or let a local process write around admission); etcd is on
// a socket in the data directory, which only the server's user can enter;
// and a second server with a data directory of its own runs beside it.
func TestEmbeddedEtcdOnAPrivateSocket(t *testing.T) {
	a := startServer(t, framework.MeshServerOptions{SkipRegistration: true})
	b := startServer(t, framework.MeshServerOptions{SkipRegistration: true})
	for _, m := range []*framework.MeshServer{a, b} {
		if ports := listeningTCPPorts(t, m.Pid()); len(ports) != 1 || ports[0] != m.Port {
			t.Errorf("server %d listens on TCP ports %v, want only its secure port %d", m.Pid(), ports, m.Port)
		}
		fi, err := os.Stat(m.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("data directory %s has mode %v, want 0700", m.DataDir, fi.Mode())
		}
		sock, err := os.Stat(filepath.Join(m.DataDir, "etcd.sock"))
		if err != nil || sock.Mode()&os.ModeSocket == 0 {
			t.Errorf("no etcd socket in %s: %v", m.DataDir, err)
		}
		if _, err := meshClient(t, m).List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("server %d: %v", m.Pid(), err)
		}
	}
}

func meshClient(t *testing.T, m *framework.MeshServer) dynamic.NamespaceableResourceInterface {
	t.Helper()
	c, err := dynamic.NewForConfig(m.DirectRESTConfig(admin))
	if err != nil {
		t.Fatal(err)
	}
	return c.Resource(framework.ClusterMeshGVR)
}

// TestRestartWhileTheOldServerHoldsTheDataDirectory: a new server on the
// data directory of one still running (a restart overlapping the old run's
// shutdown) waits, leaving the running one alone, and takes over with the
// data once it has stopped.
func TestRestartWhileTheOldServerHoldsTheDataDirectory(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	old := startServer(t, framework.MeshServerOptions{SkipRegistration: true})
	created := createMesh(t, ctx, func(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return meshClient(t, old).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	})

	type started struct {
		m   *framework.MeshServer
		err error
	}
	done := make(chan started, 1)
	go func() {
		m, err := tryStartServer(t, framework.MeshServerOptions{SkipRegistration: true, DataDir: old.DataDir})
		done <- started{m, err}
	}()
	select {
	case s := <-done:
		t.Fatalf("a second server became ready on a held data directory (err %v)", s.err)
	case <-time.After(5 * time.Second):
	}
	if _, err := meshClient(t, old).Namespace(created.GetNamespace()).Get(ctx, created.GetName(), metav1.GetOptions{}); err != nil {
		t.Fatalf("the running server, while the new one waits: %v", err)
	}
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	s := <-done
	if s.err != nil {
		t.Fatalf("the new server after the old one stopped: %v", s.err)
	}
	if !s.m.LogContains("Waiting for the data directory") {
		t.Error("the new server did not say that it waited for the data directory")
	}
	got, err := meshClient(t, s.m).Namespace(created.GetNamespace()).Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil || got.GetUID() != created.GetUID() {
		t.Fatalf("the mesh after the handover: %v", err)
	}
}
