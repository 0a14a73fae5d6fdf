// Command localenv is what `make run` runs: a local playground with real
// kube-apiservers, each with its kube-controller-manager (cluster-0 hosts the
// mesh.kilo.squat.ai API, cluster-1.. are members), kilo-mesh-apiserver behind the aggregation layer, Kilo-annotated
// sample nodes on every cluster, the kubeconfig Secret of cluster-1 in the
// namespace demo, and the ClusterMeshGrant that lets demo's meshes reach
// into cluster-0 (artifacts/examples/clustermeshgrant.yaml), since tenants
// there hold edit and no Peer rights. It prints a KUBECONFIG and commands to
// try, and stops everything on Ctrl-C.
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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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
		}
	}

	kubeconfig := filepath.Join(runDir, "kubeconfig")
	if err := writeCombinedKubeconfig(env, kubeconfig); err != nil {
		return err
	}
	printHelp(env, m, kubeconfig, example, grant)

	select {
	case <-ctx.Done():
		stopSignals() // a second Ctrl-C now kills at once
		fmt.Println()
	case <-m.Exited():
		return fmt.Errorf("kilo-mesh-apiserver exited; last lines of %s:\n%s", m.LogPath, m.LogTail(40))
	}
	return nil
}

// Network layout of cluster i, disjoint across clusters as Kilo needs, and
// matching artifacts/examples/clustermesh.yaml (cluster 0 = "east", the local
// cluster; cluster 1 = "west"):
//
//	pods        10.(42+10i).0.0/16, node k: 10.(42+10i).k.0/24
//	services    10.(43+10i).0.0/16 (the kube-apiserver's --service-cluster-ip-range)
//	Kilo subnet 10.(4+i).0.0/16, leaders' WireGuard IPs .1, .2, ... by location name
//	node hosts  192.168.(10+10i).0/24, node k: 192.168.(10+10i).(10+k)
//	endpoints   public documentation ranges, UDP 51820
func podCIDR(i int) string     { return fmt.Sprintf("10.%d.0.0/16", 42+10*i) }
func serviceCIDR(i int) string { return fmt.Sprintf("10.%d.0.0/16", 43+10*i) }
func kiloSubnet(i int) string  { return fmt.Sprintf("10.%d.0.0/16", 4+i) }
func nodeCIDR(i int) string    { return fmt.Sprintf("192.168.%d.0/24", 10+10*i) }

// exampleClusters is how many clusters the example ClusterMesh names; the
// others are left for `kubectl mesh join` (docs/tutorial.md).
const exampleClusters = 2

// meshName is cluster i's name in the example ClusterMesh, or the name the
// tutorial joins it as.
func meshName(i int) string {
	switch i {
	case 0:
		return "east"
	case 1:
		return "west"
	case 2:
		return "north"
	default:
		return fmt.Sprintf("cluster-%d", i)
	}
}

// secretName is the kubeconfig Secret of member cluster i in namespace demo.
func secretName(i int) string { return meshName(i) + "-kubeconfig" }

func publicIP(i, n int) string {
	switch i {
	case 0:
		return fmt.Sprintf("203.0.113.%d", 10+n)
	case 1:
		return fmt.Sprintf("198.51.100.%d", 10+n)
	default:
		return fmt.Sprintf("192.0.2.%d", (i-2)*20+10+n)
	}
}

// createSampleNodes creates n nodes on cluster i as kg would annotate them
// with location granularity: odd nodes in location dc1, even ones in dc2;
// the first node of each location is its leader (leader annotation and a
// public endpoint) and carries the location's WireGuard IP (dc1 .1, dc2 .2,
// the order of the group names).
func createSampleNodes(ctx context.Context, env *framework.Env, i, n int) error {
	leaders := map[string]bool{}
	for k := 1; k <= n; k++ {
		location, wgHost := "dc1", 1
		if k%2 == 0 {
			location, wgHost = "dc2", 2
		}
		node := framework.KiloNode{
			Name:        fmt.Sprintf("%s-node-%d", env.Cluster(i).Name, k),
			Location:    location,
			RegionLabel: location,
			Endpoint:    fmt.Sprintf("%s:51820", publicIP(i, k)),
			ExternalIP:  publicIP(i, k),
			InternalIP:  fmt.Sprintf("192.168.%d.%d/24", 10+10*i, 10+k),
			PodCIDR:     fmt.Sprintf("10.%d.%d.0/24", 42+10*i, k),
			Granularity: "location",
		}
		if !leaders[location] {
			leaders[location] = true
			node.Leader = true
			node.WireGuardIP = fmt.Sprintf("10.%d.0.%d/16", 4+i, wgHost)
		}
		if _, err := env.CreateKiloNode(ctx, i, node); err != nil {
			return err
		}
	}
	return nil
}

// setupDemo creates namespace demo on the host with the kubeconfig Secret of
// the example's member cluster (user admin there; west-kubeconfig for
// cluster-1) and lets tenant-a edit there.
func setupDemo(ctx context.Context, env *framework.Env) error {
	client := env.Client(framework.HostCluster, framework.UserAdmin)
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for i := 1; i < min(env.NumClusters(), exampleClusters); i++ {
		if _, err := env.CreateKubeconfigSecret(ctx, demoNamespace, secretName(i), i, framework.UserAdmin); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return env.GrantNamespaceRole(ctx, framework.HostCluster, demoNamespace, framework.UserTenantA, "edit")
}

// applyDemoGrant creates the ClusterMeshGrant of artifacts/examples as an
// admin and says so: without it, tenant-a's mesh could not have a local
// cluster. It returns the manifest's path.
func applyDemoGrant(ctx context.Context, env *framework.Env) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "artifacts", "examples", "clustermeshgrant.yaml")
	if _, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "apply", "-f", path); err != nil {
		return "", fmt.Errorf("applying the demo's ClusterMeshGrant %s: %w: %s", path, err, stderr)
	}
	log.Printf("created ClusterMeshGrant demo (%s): the meshes of namespace %s may reach into %s within its networks",
		path, demoNamespace, env.Cluster(framework.HostCluster).Name)
	return path, nil
}

// writeCombinedKubeconfig writes one kubeconfig with a context
// <cluster>-<user> for every cluster and user; the current context is
// cluster-0-admin in namespace demo.
func writeCombinedKubeconfig(env *framework.Env, path string) error {
	cfg := clientcmdapi.NewConfig()
	for i := range env.NumClusters() {
		c := env.Cluster(i)
		ca, err := os.ReadFile(c.CAFile)
		if err != nil {
			return err
		}
		cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: ca}
		ns := "default"
		if i == framework.HostCluster {
			ns = demoNamespace
		}
		for _, u := range env.Users() {
			cfg.AuthInfos[u] = &clientcmdapi.AuthInfo{Token: env.Token(u)}
			cfg.Contexts[c.Name+"-"+u] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: u, Namespace: ns}
		}
	}
	cfg.CurrentContext = env.Cluster(framework.HostCluster).Name + "-" + framework.UserAdmin
	return clientcmd.WriteToFile(*cfg, path)
}

func printHelp(env *framework.Env, m *framework.MeshServer, kubeconfig, example, grant string) {
	kubectl := env.KubectlPath()
	fmt.Printf(`
kilo-mesh local environment is up: %d clusters, kilo-mesh-apiserver at %s.

  export KUBECONFIG=%s
  alias kubectl=%s   # kubectl %s; any recent kubectl works
  export PATH=%s:$PATH   # kubectl mesh: the plugin make run built

Contexts: cluster-<i>-<user> for users admin, tenant-a, tenant-b, viewer-a
(current: cluster-0-admin, namespace demo). cluster-0 hosts the API.

Clusters (Kilo nodes in locations dc1 and dc2, WireGuard port 51820):
`, env.NumClusters(), m.URL, kubeconfig, kubectl, framework.KubeVersion, pluginDir())
	for i := range env.NumClusters() {
		secret := "local (the server's own identity)"
		switch {
		case i >= exampleClusters:
			secret = fmt.Sprintf("not in a mesh yet: kubectl mesh join demo --name %s --member-kubeconfig %s --member-context %s-admin",
				meshName(i), kubeconfig, env.Cluster(i).Name)
		case i != framework.HostCluster:
			secret = "Secret demo/" + secretName(i) + `, key "kubeconfig"`
		}
		fmt.Printf("  %s = %q: pods %s, services %s, Kilo subnet %s, nodes %s; %s\n",
			env.Cluster(i).Name, meshName(i), podCIDR(i), serviceCIDR(i), kiloSubnet(i), nodeCIDR(i), secret)
	}
	fmt.Printf(`
Try:
  kubectl api-resources --api-group=mesh.kilo.squat.ai
  kubectl get clustermeshes
  kubectl get nodes -o wide
  kubectl get nodes -o yaml --context cluster-1-admin | grep kilo.squat.ai
  kubectl get peers.kilo.squat.ai --context cluster-1-admin
  kubectl get cmesh -n demo --context cluster-0-tenant-a       # allowed (edit in demo)
  kubectl get cmesh -n demo --context cluster-0-tenant-b       # forbidden
  kubectl mesh status demo                                     # and plan, peers, why, graph: kubectl mesh --help
  kubectl mesh status demo --context cluster-0-tenant-a        # flags after the plugin's name: kubectl refuses them before it
`)
	if example != "" {
		fmt.Printf("  kubectl get cmesh -o yaml                                    # from %s, created by tenant-a\n", example)
	}
	fmt.Printf(`  kubectl get clustermeshgrants                                # created by the demo: %s
  kubectl get cmesh demo -o jsonpath='{.status.conditions[?(@.type=="Granted")]}'
  kubectl get clustermeshgrants --context cluster-0-tenant-a   # forbidden: grants are for admins
`, grant)
	fmt.Printf(`
Logs: %s (kilo-mesh-apiserver), %s
Press Ctrl-C to stop.
`, m.LogPath, filepath.Join(env.Dir, "logs"))
}

// pluginDir is where make run built kubectl-mesh: bin of the repository.
func pluginDir() string {
	root, err := framework.RepoRoot()
	if err != nil {
		return "bin"
	}
	return filepath.Join(root, "bin")
}
