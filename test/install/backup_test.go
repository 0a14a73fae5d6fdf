//go:build e2e

package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// storeState is what a restore must bring back: every mesh and grant
// with its UID and generation, and the mesh's conditions.
type storeState map[string]string

// readStore reads every mesh (of the namespaces given) and grant through
// the aggregator.
func readStore(t *testing.T, ctx context.Context, namespaces ...string) storeState {
	t.Helper()
	dyn := env.Dynamic(framework.HostCluster, admin)
	out := storeState{}
	for _, ns := range namespaces {
		list, err := dyn.Resource(framework.ClusterMeshGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing the meshes of %s: %v", ns, err)
		}
		for _, m := range list.Items {
			var conds []string
			for _, typ := range []string{"Ready", "Granted", "ClustersReachable", "PeersApplied"} {
				c := condition(&m, typ)
				conds = append(conds, fmt.Sprintf("%s=%v/%v", typ, c["status"], c["reason"]))
			}
			out["mesh "+ns+"/"+m.GetName()] = fmt.Sprintf("uid %s generation %d %s", m.GetUID(), m.GetGeneration(), strings.Join(conds, " "))
		}
	}
	grants, err := dyn.Resource(framework.ClusterMeshGrantGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the grants: %v", err)
	}
	for _, g := range grants.Items {
		out["grant "+g.GetName()] = fmt.Sprintf("uid %s generation %d", g.GetUID(), g.GetGeneration())
	}
	return out
}

// snapshot runs `kilo-mesh-apiserver snapshot` of the image with args.
func snapshot(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(ctx, imageBinary, append([]string{"snapshot"}, args...)...).CombinedOutput()
	return string(out), err
}

// snapshotStreams runs `kilo-mesh-apiserver snapshot` with stdin from the
// file in (if any) and stdout into the file out (if any), as `kubectl exec`
// and `kubectl attach` stream them; it returns stderr.
func snapshotStreams(t *testing.T, ctx context.Context, in, out string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, imageBinary, append([]string{"snapshot"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout = f
	} else {
		cmd.Stdout = &stderr
	}
	err := cmd.Run()
	return stderr.String(), err
}

// startEtcdCluster starts a 3-member etcd with TLS, stopped when the test ends.
func startEtcdCluster(t *testing.T, ctx context.Context) *framework.EtcdCluster {
	t.Helper()
	c, err := env.StartEtcdCluster(ctx, framework.EtcdClusterOptions{})
	if c != nil {
		t.Cleanup(func() { c.Stop() })
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// etcdFlags are the store flags of a server on c under prefix.
func etcdFlags(c *framework.EtcdCluster, prefix string) []string {
	return []string{"--etcd-servers=" + strings.Join(c.Endpoints, ","), "--etcd-cafile=" + c.CAFile,
		"--etcd-certfile=" + c.ClientCertFile, "--etcd-keyfile=" + c.ClientKeyFile, "--etcd-prefix=" + prefix}
}

// TestBackupRestore: a snapshot taken while the default install serves,
// restored into a fresh 3-member etcd (moving to HA), then one taken while
// HA serves, restored into a fresh embedded store. Every time the meshes
// and grants come back with their UIDs, the members' Peers stay untouched
// throughout (a watch on each member sees no event, the servers count no
// write of them), and the restore refuses a store a server runs on.
func TestBackupRestore(t *testing.T) {
	ctx := testContext(t, 6*time.Minute)
	ensureSmokeNodes(t, ctx)
	fresh, stopFresh := context.WithCancel(ctx)
	defer stopFresh()
	go env.KeepKiloNodesFresh(fresh, 15*time.Second)
	dir := t.TempDir()

	embedded := startServer(t, framework.MeshServerOptions{})
	ns, name, mesh := createTenantMesh(t, ctx)
	waitConverged(t, ctx, embedded)
	for i := range 2 {
		if len(meshPeers(t, ctx, i, string(mesh.GetUID()))) == 0 {
			t.Fatalf("cluster %d holds no Peer of the mesh", i)
		}
	}
	before := readStore(t, ctx, ns)
	if c := before["mesh "+ns+"/"+name]; !strings.Contains(c, "Granted=True") || !strings.Contains(c, "Ready=True") {
		t.Fatalf("the mesh before the backup: %s", c)
	}
	watches := []*peerWatch{watchPeers(t, ctx, 0, string(mesh.GetUID())), watchPeers(t, ctx, 1, string(mesh.GetUID()))}

	// Default to HA: a snapshot while the embedded store serves.
	embeddedSnap := filepath.Join(dir, "embedded.db")
	if out, err := snapshot(t, ctx, "save", "--data-dir="+embedded.DataDir, embeddedSnap); err != nil {
		t.Fatalf("snapshot save of the serving embedded store: %v\n%s", err, out)
	}
	if out, err := snapshot(t, ctx, "restore", "--data-dir="+embedded.DataDir, embeddedSnap); err == nil || !strings.Contains(out, "runs on this data directory") {
		t.Errorf("a restore into the store of a running server: %v\n%s", err, out)
	}
	if err := embedded.Stop(); err != nil {
		t.Fatal(err)
	}
	etcdCluster := startEtcdCluster(t, ctx)
	haPrefix := "/" + framework.UniqueName("restored")
	// The framework gives the HA servers a prefix of their own; installs
	// keep the default on both sides.
	out, err := snapshot(t, ctx, append([]string{"restore", embeddedSnap, "--snapshot-prefix=/registry/mesh.kilo.squat.ai"}, etcdFlags(etcdCluster, haPrefix)...)...)
	if err != nil {
		t.Fatalf("restoring into the 3-member etcd: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	ha := startServer(t, framework.MeshServerOptions{Etcd: etcdCluster, EtcdPrefix: haPrefix})
	restored(t, ctx, ha, ns, name, before)

	// Back: a snapshot while HA serves, into a fresh embedded store, both
	// streamed as the restore pod and kubectl exec stream them.
	haSnap := filepath.Join(dir, "ha.db")
	if out, err := snapshotStreams(t, ctx, "", haSnap, append([]string{"save", "-"}, etcdFlags(etcdCluster, haPrefix)...)...); err != nil {
		t.Fatalf("snapshot save of the serving 3-member etcd: %v\n%s", err, out)
	}
	if err := ha.Stop(); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	out, err = snapshotStreams(t, ctx, haSnap, "", "restore", "--snapshot-prefix="+haPrefix, "--data-dir="+dataDir, "-")
	if err != nil {
		t.Fatalf("restoring into a fresh embedded store: %v\n%s", err, out)
	}
	back := startServer(t, framework.MeshServerOptions{DataDir: dataDir})
	restored(t, ctx, back, ns, name, before)
	for _, w := range watches {
		if got := w.stop(); len(got) != 0 {
			t.Errorf("cluster %d: Peer events across both moves: %v", w.cluster, got)
		}
	}
	deleteMesh(t, ctx, ns, name)
}

// restored checks that server, on a restored store, serves what was
// backed up, converges, and has written none of the mesh's Peers.
func restored(t *testing.T, ctx context.Context, server *framework.MeshServer, ns, name string, before storeState) {
	t.Helper()
	waitConverged(t, ctx, server)
	after := readStore(t, ctx, ns)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s after the restore: %q, before: %q", k, after[k], v)
		}
	}
	if w := meshWrites(t, ctx, server, ns, name); w != 0 {
		t.Errorf("the server sent %v writes of the mesh's Peers, want 0", w)
	}
}

// createTenantMesh creates, through the running server, a grant for
// tenant-a and a mesh of tenant-a joining the host and cluster 1 that the
// grant bounds (so that restored without its grant, it would lose its
// Peers on the host). It returns the mesh's namespace, name and object.
func createTenantMesh(t *testing.T, ctx context.Context) (string, string, *unstructured.Unstructured) {
	t.Helper()
	grant := framework.UniqueName("tenant")
	if err := env.ApplyGrant(ctx, grant, framework.TenantGrant(framework.UserTenantA)); err != nil {
		t.Fatal(err)
	}
	ns := framework.UserTenantA
	name := framework.UniqueName("mesh")
	if _, err := env.CreateKubeconfigSecret(ctx, ns, name+"-kubeconfig", 1, admin); err != nil {
		t.Fatal(err)
	}
	obj := smokeMesh(t, name, name+"-kubeconfig")
	mesh, err := env.Dynamic(framework.HostCluster, framework.UserTenantA).Resource(framework.ClusterMeshGVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the tenant's mesh: %v", err)
	}
	return ns, name, mesh
}

// deleteMesh deletes a mesh through the running server and waits until its
// finalizer has removed its Peers, so that no later test finds them.
func deleteMesh(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	meshes := env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR).Namespace(ns)
	if err := meshes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting mesh %s/%s: %v", ns, name, err)
	}
	framework.EventuallyT(t, time.Minute, "the mesh gone", func() error {
		_, err := meshes.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
}

// meshWrites is the Peer writes server sent for the mesh ns/name.
func meshWrites(t *testing.T, ctx context.Context, server *framework.MeshServer, ns, name string) float64 {
	t.Helper()
	raw, err := framework.Scrape(ctx, server.DirectRESTConfig(admin))
	if err != nil {
		t.Fatal(err)
	}
	n, err := framework.MetricSumWhere(raw, "kilo_mesh_peer_writes_total", map[string]string{"mesh": ns + "/" + name})
	if err != nil && !errors.Is(err, framework.ErrNoSamples) {
		t.Fatal(err)
	}
	return n
}
