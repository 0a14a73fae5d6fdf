// Command localenv is what `make run` runs: a local playground with real
// kube-apiservers, each with its kube-controller-manager (cluster-0 hosts the
// mesh.kilo.squat.ai API, cluster-1.. are members), kilo-mesh-apiserver behind the aggregation layer, Kilo-annotated
// sample nodes on every cluster, the kubeconfig Secret of cluster-1 in the
// namespace demo, and the ClusterMeshGrant that lets demo's meshes reach
// into cluster-0 (artifacts/examples/clustermeshgrant.yaml), since tenants
// there hold edit and no Peer rights. Services are enabled on the example
// mesh, west exports demo/hello and east, the host, imports it
// (services.go). It prints a KUBECONFIG and commands to try, and stops
// everything on Ctrl-C.
//
// The mesh server's embedded etcd data lives in <run-dir>/mesh-data and is
// kept across runs; the clusters are new on every run.
//
// Needs the binaries of hack/build-tools.sh.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

const demoNamespace = "demo"

func main() {
	defaultRunDir := filepath.Join(cacheHome(), "kilo-mesh-apiserver", "run")
	var (
		clusters = flag.Int("clusters", 2, "number of clusters (cluster-0 hosts the API)")
		nodes    = flag.Int("nodes", 3, "sample Kilo nodes per cluster")
		runDir   = flag.String("run-dir", defaultRunDir, "state directory; the mesh server's data in <run-dir>/mesh-data is kept across runs")
		fresh    = flag.Bool("fresh", false, "delete the mesh server's data first")
		example  = flag.String("example", "", "manifest applied in namespace demo as tenant-a once the server is up (default: artifacts/examples/clustermesh.yaml, if present)")
	)
	flag.Parse()
	log.SetFlags(log.Ltime)
	if *clusters < 2 || *clusters > 20 {
		log.Fatal("--clusters must be between 2 and 20")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, stop, *runDir, *clusters, *nodes, *fresh, *example); err != nil {
		log.Fatal(err)
	}
}

func cacheHome() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return os.TempDir()
	}
	return filepath.Join(home, ".cache")
}

// ports are the mesh server's ports, kept across runs so that the address
// in a kubeconfig of the last run still works. The embedded etcd needs none:
// it listens on a unix socket in its data dir.
type ports struct {
	Secure int `json:"secure"`
}

func portFree(p int) bool {
	if p == 0 {
		return false
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func loadPorts(path string) ports {
	var p ports
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &p) != nil {
		return ports{}
	}
	if !portFree(p.Secure) {
		log.Printf("port %d of the last run is taken; using a new one", p.Secure)
		return ports{}
	}
	return p
}

func run(ctx context.Context, stopSignals func(), runDir string, clusters, nodesPerCluster int, fresh bool, example string) error {
	meshData := filepath.Join(runDir, "mesh-data")
	envDir := filepath.Join(runDir, "env")
	if fresh {
		if err := os.RemoveAll(meshData); err != nil {
			return err
		}
		os.Remove(filepath.Join(runDir, "ports.json"))
	}
	// The clusters (etcd data, PKI, logs) are new on every run.
	if err := os.RemoveAll(envDir); err != nil {
		return err
	}
	if err := os.MkdirAll(meshData, 0o700); err != nil {
		return err
	}

	startCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	log.Printf("starting %d clusters in %s", clusters, envDir)
	var serviceCIDRs []string
	for i := range clusters {
		serviceCIDRs = append(serviceCIDRs, serviceCIDR(i))
	}
	env, err := framework.Start(startCtx, framework.Options{
		Clusters: clusters, Dir: envDir, KeepDir: true, ServiceCIDRs: serviceCIDRs, Logf: log.Printf,
	})
	if err != nil {
		return err
	}
	defer func() {
		log.Printf("stopping everything")
		if err := env.Stop(); err != nil {
			log.Printf("stopping: %v", err)
		}
	}()

	for i := range clusters {
		if err := createSampleNodes(startCtx, env, i, nodesPerCluster); err != nil {
			return err
		}
	}
	freshCtx, stopFresh := context.WithCancel(ctx)
	defer stopFresh()
	go env.KeepKiloNodesFresh(freshCtx, 20*time.Second)
	go keepNodesReady(freshCtx, env, nodesPerCluster)

	portsFile := filepath.Join(runDir, "ports.json")
	p := loadPorts(portsFile)
	// The demo's member clusters listen on loopback, which the server refuses
	// to dial unless told (by default it dials public addresses only).
	log.Printf("building and starting kilo-mesh-apiserver (data in %s), allowed to reach member API servers in %s",
		meshData, strings.Join(framework.LoopbackServers, ","))
	m, err := env.StartMeshServer(startCtx, framework.MeshServerOptions{
		DataDir: meshData, Port: p.Secure,
		MemberServerCIDRs: framework.LoopbackServers,
	})
	if err != nil {
		if m != nil {
			return fmt.Errorf("%w\nlast lines of %s:\n%s", err, m.LogPath, m.LogTail(40))
		}
		return err
	}
	if data, err := json.Marshal(ports{Secure: m.Port}); err == nil {
		_ = os.WriteFile(portsFile, data, 0o600)
	}

	if err := setupDemo(startCtx, env); err != nil {
		return err
	}
	if example == "" {
		if root, err := framework.RepoRoot(); err == nil {
			example = filepath.Join(root, "artifacts", "examples", "clustermesh.yaml")
			if _, err := os.Stat(example); err != nil {
				log.Printf("%s not found: no example applied", example)
				example = ""
			}
		}
	}
	var services bool // whether the services demo runs
	grant, err := applyDemoGrant(startCtx, env)
	if err != nil {
		return err
	}
	if example != "" {
		// As the tenant, who holds edit in demo and no Peer rights: the grant is what lets the mesh in.
		out, _, err := env.Kubectl(startCtx, framework.HostCluster, framework.UserTenantA, "apply", "-n", demoNamespace, "-f", example)
		if err != nil {
			log.Printf("applying %s as %s: %v", example, framework.UserTenantA, err)
		} else {
			log.Printf("applied %s as %s: %s", example, framework.UserTenantA, out)
			if err := setupServicesDemo(startCtx, env); err != nil {
				return err
			}
			services = true
		}
	}

	kubeconfig := filepath.Join(runDir, "kubeconfig")
	if err := writeCombinedKubeconfig(env, kubeconfig); err != nil {
		return err
	}
	printHelp(env, m, kubeconfig, example, grant, services)

	select {
	case <-ctx.Done():
		stopSignals() // a second Ctrl-C now kills at once
		fmt.Println()
	case <-m.Exited():
		return fmt.Errorf("kilo-mesh-apiserver exited; last lines of %s:\n%s", m.LogPath, m.LogTail(40))
	}
	return nil
}
