// Command benchreconciler measures the reconciler of the real server binary
// on real kube-apiservers holding thousands of Kilo-annotated Nodes: the
// time until every Peer of a new mesh exists, the time a single node change
// takes to reach every other cluster, the writes in steady state, and the
// server's memory. hack/bench-reconciler.sh runs it; the figures go to
// docs/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/internal/benchenv"
	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

const (
	namespace = "bench"
	meshName  = "bench"
)

type config struct {
	clusters, nodes, perLoc, changes, burst int
	granularity                             string
	steady, checkIns                        time.Duration
	loop                                    bool
	serverArgs                              []string
	cpuProfile                              string
	cpuProfileFor                           time.Duration
	heapProfile                             string
}

func main() {
	var c config
	flag.IntVar(&c.clusters, "clusters", 3, "member clusters (cluster 0 is local)")
	flag.IntVar(&c.nodes, "nodes", 2000, "Kilo nodes per cluster")
	flag.StringVar(&c.granularity, "granularity", "Full", "Full (one Peer per node) or Location")
	flag.IntVar(&c.perLoc, "nodes-per-location", 100, "nodes per Kilo location with -granularity=Location")
	flag.IntVar(&c.changes, "changes", 200, "single node changes timed one after the other")
	flag.DurationVar(&c.checkIns, "checkins", 30*time.Second, "Kilo's check-in stream: every node's last-seen patched once per this period, spread evenly (0: none)")
	flag.BoolVar(&c.loop, "loop", true, "also time the same changes through the simplest loop (a Node informer on cluster 1, one Peer merge patch on cluster 2)")
	flag.IntVar(&c.burst, "burst", 100, "changes of distinct nodes spread over one second, each timed until it is everywhere (0: none; needs -granularity=Full)")
	flag.DurationVar(&c.steady, "steady", time.Minute, "how long writes are counted in steady state")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write the server's CPU profile during the single changes to this file")
	flag.DurationVar(&c.cpuProfileFor, "cpuprofile-duration", 30*time.Second, "how long the -cpuprofile profile runs, from the first single change")
	flag.StringVar(&c.heapProfile, "heapprofile", "", "write the server's heap profile at the end to this file")
	flag.Func("server-arg", "a flag for kilo-mesh-apiserver, e.g. --member-cluster-qps=200 (repeatable)", func(s string) error {
		c.serverArgs = append(c.serverArgs, s)
		return nil
	})
	flag.Parse()
	benchenv.Run(time.Hour, func(ctx context.Context) error { return run(ctx, c) })
}

// bench holds the environment of a run.
type bench struct {
	config
	env    *framework.Env
	server *framework.MeshServer
	kube   []kubernetes.Interface
	peers  []dynamic.ResourceInterface
	meta   []metadata.ResourceInterface
	uid    types.UID
	// checkInsSent counts the check-in stream's patches answered.
	checkInsSent atomic.Int64
}

func run(ctx context.Context, c config) error {
	if c.granularity != string(meshv1alpha1.GranularityFull) && c.granularity != string(meshv1alpha1.GranularityLocation) {
		return fmt.Errorf("-granularity must be Full or Location")
	}
	env, server, err := benchenv.Start(ctx, framework.Options{
		Clusters: c.clusters,
		// The Nodes have no kubelets renewing their Leases: without a grace
		// period as long as the run, the node lifecycle controller marks
		// every Node Unknown and taints it, thousands of Node writes racing
		// the check-in stream that a cluster with live kubelets never sees.
		ExtraControllerManagerArgs: []string{"--node-monitor-grace-period=2h"},
	}, framework.MeshServerOptions{ExtraArgs: c.serverArgs})
	if err != nil {
		return err
	}
	defer env.Stop()
	b := &bench{config: c, env: env, server: server}
	for i := range c.clusters {
		cfg := benchenv.AdminConfig(env, i)
		// Nodes in protobuf, as kubelets and controllers read them: JSON answers to
		// the check-in stream would cost this process and the members more.
		kubeCfg := rest.CopyConfig(cfg)
		kubeCfg.ContentType = runtime.ContentTypeProtobuf
		b.kube = append(b.kube, kubernetes.NewForConfigOrDie(kubeCfg))
		b.peers = append(b.peers, dynamic.NewForConfigOrDie(cfg).Resource(kilov1alpha1.PeerResource))
		b.meta = append(b.meta, metadata.NewForConfigOrDie(cfg).Resource(kilov1alpha1.PeerResource))
	}

	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, c.clusters)
	for i := range c.clusters {
		wg.Go(func() {
			errs[i] = b.env.CreateKiloNodes(ctx, i, b.nodes, func(j int) framework.KiloNode { return b.kiloNode(i, j) })
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	log.Printf("created %d x %d nodes in %s", c.clusters, c.nodes, time.Since(start).Round(time.Second))
	stopCheckIns := func() (int64, int64) { return 0, 0 }
	if c.checkIns > 0 {
		stopCheckIns = b.checkIns(ctx, c.checkIns)
	}

	created, ready, err := b.createMesh(ctx)
	if err != nil {
		return err
	}
	direct := server.DirectRESTConfig(framework.UserAdmin)
	beforeChanges, err := framework.Scrape(ctx, direct)
	if err != nil {
		return err
	}
	waitProfile := func() {}
	if c.cpuProfile != "" {
		waitProfile = benchenv.CPUProfile(ctx, direct, c.cpuProfileFor, c.cpuProfile)
	}
	p50, p99, worst, err := b.singleChanges(ctx)
	if err != nil {
		return err
	}
	waitProfile()
	afterChanges, err := framework.Scrape(ctx, direct)
	if err != nil {
		return err
	}
	var loop [3]time.Duration
	if c.loop && c.clusters >= 3 {
		if loop[0], loop[1], loop[2], err = b.loopChanges(ctx, 1, 2); err != nil {
			return err
		}
		log.Printf("%d changes through the simplest loop: p50 %s, p99 %s", c.changes, loop[0], loop[1])
	}
	var burst [3]time.Duration
	var beforeBurst, afterBurst []byte
	if c.burst > 0 {
		time.Sleep(2 * time.Second) // the last single change's echoes
		if beforeBurst, err = framework.Scrape(ctx, direct); err != nil {
			return err
		}
		if burst[0], burst[1], burst[2], err = b.burst(ctx, c.burst); err != nil {
			return err
		}
		log.Printf("burst of %d changes in 1 s: p50 %s, p99 %s, slowest %s", c.burst, burst[0], burst[1], burst[2])
		if afterBurst, err = framework.Scrape(ctx, direct); err != nil {
			return err
		}
	}
	perMinute, err := b.steadyWrites(ctx)
	if err != nil {
		return err
	}
	sent, failed := stopCheckIns()
	rss, hwm, _ := benchenv.Memory(server.Pid()) // 0 when unreadable, as the table shows
	if c.heapProfile != "" {
		if err := benchenv.HeapProfile(ctx, direct, c.heapProfile); err != nil {
			return err
		}
	}
	metrics, err := framework.Scrape(ctx, direct)
	if err != nil {
		return err
	}
	passes, err := framework.MetricSum(metrics, "kilo_mesh_reconcile_duration_seconds_count")
	if err != nil {
		return err
	}
	passTime, err := framework.MetricSum(metrics, "kilo_mesh_reconcile_duration_seconds_sum")
	if err != nil {
		return err
	}

	peersPerCluster := (c.clusters - 1) * b.groups()
	fmt.Printf("\n%d clusters x %d nodes, %s granularity: %d Peers per cluster, %d in all; server flags %q\n",
		c.clusters, c.nodes, c.granularity, peersPerCluster, peersPerCluster*c.clusters, c.serverArgs)
	fmt.Printf("| figure | value | goal |\n|---|---|---|\n")
	fmt.Printf("| mesh created -> every Peer exists on every cluster | %s | |\n", created.Round(10*time.Millisecond))
	fmt.Printf("| mesh created -> status Ready | %s | |\n", ready.Round(10*time.Millisecond))
	fmt.Printf("| single node change -> its Peers updated everywhere, p50 (%d changes) | %s | |\n", c.changes, p50.Round(time.Millisecond))
	fmt.Printf("| single node change -> its Peers updated everywhere, p99 | %s | < 1 s |\n", p99.Round(time.Millisecond))
	fmt.Printf("| single node change, slowest | %s | |\n", worst.Round(time.Millisecond))
	if loop[0] > 0 {
		fmt.Printf("| simplest loop (informer + one Peer patch, c1 -> c2), p50 / p99 / slowest (%d changes) | %s / %s / %s | |\n", c.changes,
			loop[0].Round(time.Millisecond), loop[1].Round(time.Millisecond), loop[2].Round(time.Millisecond))
	}
	if burst[0] > 0 {
		fmt.Printf("| burst of %d changes within 1 s -> each everywhere, p50 / p99 / slowest | %s / %s / %s | each < 1 s |\n", c.burst,
			burst[0].Round(time.Millisecond), burst[1].Round(time.Millisecond), burst[2].Round(time.Millisecond))
	}
	if c.checkIns > 0 {
		fmt.Printf("| check-in stream (every node every %s): patches sent, failed | %d, %d | |\n", c.checkIns, sent, failed)
	}
	fmt.Printf("| Peer writes per minute in steady state | %.1f | 0 |\n", perMinute.peers)
	fmt.Printf("| ClusterMesh writes per minute in steady state | %.1f | 0 |\n", perMinute.meshes)
	fmt.Printf("| Lease writes per minute (leader election renewals) | %.1f | |\n", perMinute.leases)
	fmt.Printf("| server resident memory at the end (peak) | %d MiB (%d MiB) | < 300 MiB |\n", rss>>20, hwm>>20)
	perMinute.cpu.print(b.steady)
	if passes > 0 {
		fmt.Printf("| reconcile passes, mean duration | %.0f, %s | |\n", passes, time.Duration(passTime/passes*float64(time.Second)).Round(time.Millisecond))
	}
	fmt.Printf("| load average at the end | %s | |\n", benchenv.LoadAverage())
	if err := benchenv.Budget(fmt.Sprintf("%d single changes", c.changes), beforeChanges, afterChanges); err != nil {
		return err
	}
	if afterBurst != nil {
		return benchenv.Budget(fmt.Sprintf("burst of %d", c.burst), beforeBurst, afterBurst)
	}
	return nil
}

// groups is the number of Peers each cluster exports.
func (b *bench) groups() int {
	if b.granularity == string(meshv1alpha1.GranularityFull) {
		return b.nodes
	}
	return (b.nodes + b.perLoc - 1) / b.perLoc
}

func nodeName(cluster, j int) string { return fmt.Sprintf("c%d-n%05d", cluster, j) }

func clusterName(i int) string { return fmt.Sprintf("c%d", i) }

// kiloNode is node j of cluster i in the benchmark's layout.
func (b *bench) kiloNode(cluster, j int) framework.KiloNode {
	return framework.KiloNode{
		Name:        nodeName(cluster, j),
		Location:    fmt.Sprintf("loc-%03d", j/b.perLoc),
		Leader:      j%b.perLoc == 0,
		Endpoint:    fmt.Sprintf("198.18.%d.%d:51820", cluster*8+j/256, j%256),
		InternalIP:  fmt.Sprintf("172.%d.%d.%d/16", 16+cluster, j/256, j%256),
		PodCIDR:     fmt.Sprintf("10.%d.%d.0/24", (cluster+1)*8+j/256, j%256),
		Granularity: strings.ToLower(b.granularity),
		// kube-controller-manager adds this legacy label to every Node it
		// sees without it: thousands of real Node changes while the
		// benchmark measures, unless the Nodes carry it from the start.
		Labels: map[string]string{"beta.kubernetes.io/os": "linux"},
		// kg refreshes last-seen every 30 s; a timestamp ahead keeps the
		// nodes Ready for the whole run without that write traffic.
		LastSeen: time.Now().Add(24 * time.Hour),
	}
}

// createMesh creates the mesh and returns how long until every Peer exists
// on every cluster, and until the status says Ready.
func (b *bench) createMesh(ctx context.Context) (created, ready time.Duration, err error) {
	host := b.kube[framework.HostCluster]
	if _, err := host.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return 0, 0, err
	}
	var m strings.Builder
	fmt.Fprintf(&m, "apiVersion: mesh.kilo.squat.ai/v1alpha1\nkind: ClusterMesh\nmetadata: {name: %s, namespace: %s}\nspec:\n  clusters:\n", meshName, namespace)
	for i := range b.clusters {
		fmt.Fprintf(&m, "  - name: %s\n    podCIDRs: [\"10.%d.0.0/13\"]\n    wireguardCIDR: 10.%d.0.0/16\n    granularity: %s\n",
			clusterName(i), (i+1)*8, 100+i, b.granularity)
		if i == framework.HostCluster {
			m.WriteString("    local: true\n")
			continue
		}
		secret := clusterName(i) + "-kubeconfig"
		if _, err := b.env.CreateKubeconfigSecret(ctx, namespace, secret, i, framework.UserAdmin); err != nil {
			return 0, 0, err
		}
		fmt.Fprintf(&m, "    kubeconfigSecretRef: {name: %s}\n", secret)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(m.String()), &obj.Object); err != nil {
		return 0, 0, err
	}
	meshes := dynamic.NewForConfigOrDie(b.env.RESTConfig(framework.HostCluster, framework.UserAdmin)).
		Resource(framework.ClusterMeshGVR).Namespace(namespace)
	start := time.Now()
	u, err := meshes.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("creating the mesh: %w", err)
	}
	b.uid = u.GetUID()
	want := (b.clusters - 1) * b.groups()
	// Metadata-only lists, and none of a cluster already complete: on a
	// loaded machine, whole lists of thousands of Peers several times a
	// second would be the heaviest load of the run.
	complete := make([]bool, b.clusters)
	for {
		all := true
		for i := range b.clusters {
			if complete[i] {
				continue
			}
			list, err := b.meta[i].List(ctx, metav1.ListOptions{LabelSelector: planner.LabelMeshUID + "=" + string(b.uid)})
			if err != nil {
				log.Printf("counting the Peers of cluster %d (retrying): %v", i, err)
				all = false
				continue
			}
			complete[i] = len(list.Items) >= want
			all = all && complete[i]
		}
		if all {
			created = time.Since(start)
			break
		}
		if time.Since(start) > 30*time.Minute {
			return 0, 0, fmt.Errorf("the Peers did not all appear within 30 minutes")
		}
		time.Sleep(500 * time.Millisecond)
	}
	log.Printf("every Peer exists after %s", created.Round(time.Millisecond))
	for {
		u, err := meshes.Get(ctx, meshName, metav1.GetOptions{})
		if err != nil {
			return 0, 0, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		if slices.ContainsFunc(conds, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == meshv1alpha1.ConditionReady && m["status"] == "True"
		}) {
			return created, time.Since(start), nil
		}
		if time.Since(start) > 30*time.Minute {
			return 0, 0, fmt.Errorf("the mesh did not become Ready within 30 minutes")
		}
		time.Sleep(250 * time.Millisecond)
	}
}
