// Command benchviews measures the latency of the plan and peers views
// through the aggregation layer, on real kube-apiservers holding many
// Kilo-annotated Nodes. hack/bench-views.sh runs it; the figures go to
// docs/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/internal/benchenv"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

func main() {
	var (
		clusters = flag.Int("clusters", 3, "member clusters (cluster 0 is local)")
		nodes    = flag.Int("nodes", 2000, "Kilo nodes per cluster")
		perLoc   = flag.Int("nodes-per-location", 100, "nodes per Kilo location")
		requests = flag.Int("requests", 200, "GETs per view")
		cold     = flag.Int("cold", 20, "GETs per view spaced past the plan cache's lifetime, so each one plans anew")
	)
	flag.Parse()
	benchenv.Run(30*time.Minute, func(ctx context.Context) error { return run(ctx, *clusters, *nodes, *perLoc, *requests, *cold) })
}

func run(ctx context.Context, clusters, nodes, perLoc, requests, cold int) error {
	env, server, err := benchenv.Start(ctx, framework.Options{Clusters: clusters}, framework.MeshServerOptions{})
	if err != nil {
		return err
	}
	defer env.Stop()
	start := time.Now()
	for i := 0; i < clusters; i++ {
		if err := env.CreateKiloNodes(ctx, i, nodes, func(j int) framework.KiloNode { return kiloNode(i, j, perLoc) }); err != nil {
			return err
		}
	}
	log.Printf("created %d x %d nodes in %s", clusters, nodes, time.Since(start).Round(time.Second))

	const ns = "bench"
	if _, err := env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var mesh strings.Builder
	fmt.Fprintf(&mesh, "apiVersion: mesh.kilo.squat.ai/v1alpha1\nkind: ClusterMesh\nmetadata: {name: bench, namespace: %s}\nspec:\n  clusters:\n", ns)
	for i := 0; i < clusters; i++ {
		fmt.Fprintf(&mesh, "  - name: c%d\n    podCIDRs: [\"10.%d.0.0/11\"]\n    wireguardCIDR: 10.%d.0.0/16\n    nodeCIDRs: [\"172.%d.0.0/16\"]\n    granularity: Location\n",
			i, i*32, 200+i, 16+i)
		if i == framework.HostCluster {
			mesh.WriteString("    local: true\n")
			continue
		}
		secret := fmt.Sprintf("c%d-kubeconfig", i)
		if _, err := env.CreateKubeconfigSecret(ctx, ns, secret, i, framework.UserAdmin); err != nil {
			return err
		}
		fmt.Fprintf(&mesh, "    kubeconfigSecretRef: {name: %s}\n", secret)
	}
	if _, stderr, err := env.KubectlWithInput(ctx, strings.NewReader(mesh.String()), framework.HostCluster, framework.UserAdmin, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("creating the mesh: %w: %s", err, stderr)
	}

	cfg := env.RESTConfig(framework.HostCluster, framework.UserAdmin)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	base := cfg.Host + "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/" + ns + "/clustermeshes/bench/"
	want := fmt.Sprintf(`"kiloReadyNodes":%d`, nodes)
	if err := framework.Eventually(ctx, time.Second, 5*time.Minute, func(context.Context) error {
		body, _, err := get(client, base+"plan", "")
		if err != nil {
			return err
		}
		if strings.Count(body, want) != clusters {
			return fmt.Errorf("the caches do not hold every node yet")
		}
		return nil
	}); err != nil {
		return err
	}
	log.Printf("every node in the plan %s after the mesh was created", time.Since(start).Round(time.Second))

	fmt.Printf("# %d clusters x %d nodes (%d per location), through kube-apiserver's aggregation layer\n", clusters, nodes, perLoc)
	fmt.Printf("%-36s %8s %10s %10s %10s %10s\n", "view", "GETs", "p50", "p99", "max", "bytes")
	views := []view{
		{path: "plan"}, {path: "peers"}, {path: "peers?cluster=c0"},
		{path: "peers?cluster=c0&format=wireguard"}, {path: "peers?format=dot"},
		// What kubectl get --subresource asks for, and the YAML list.
		{path: "plan", accept: acceptTable}, {path: "peers", accept: acceptTable},
		{path: "peers?cluster=c0", accept: "application/yaml"},
	}
	for _, v := range views {
		if err := measure(client, base, v, requests, 0); err != nil {
			return err
		}
	}
	// Spaced past the cache's lifetime: every GET pays for a whole plan.
	for _, v := range views[:3] {
		if err := measure(client, base, v, cold, 1100*time.Millisecond); err != nil {
			return err
		}
	}
	if rss, _, err := benchenv.Memory(server.Pid()); err == nil {
		fmt.Printf("# kilo-mesh-apiserver resident memory after the run: %d MiB\n", rss>>20)
	}
	return nil
}

// acceptTable is the Accept header of kubectl get: a Table, else JSON.
const acceptTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// view is a path below the mesh and the Accept header to GET it with
// (none: Go's client sends none, and the server answers JSON).
type view struct {
	path, accept string
}

func (v view) label() string {
	switch v.accept {
	case "":
		return v.path
	case acceptTable:
		return v.path + " (table)"
	default:
		return v.path + " (" + strings.TrimPrefix(v.accept, "application/") + ")"
	}
}

// measure GETs a view n times, pausing between GETs, and prints the figures.
func measure(client *http.Client, base string, v view, n int, pause time.Duration) error {
	var lat []time.Duration
	size := 0
	for r := 0; r < n; r++ {
		time.Sleep(pause)
		body, d, err := get(client, base+v.path, v.accept)
		if err != nil {
			return fmt.Errorf("%s: %w", v.label(), err)
		}
		lat = append(lat, d)
		size = len(body)
	}
	slices.Sort(lat)
	label := v.label()
	if pause > 0 {
		label += " (cold)"
	}
	fmt.Printf("%-36s %8d %10s %10s %10s %10d\n", label, n, pct(lat, 50), pct(lat, 99), lat[len(lat)-1].Round(100*time.Microsecond), size)
	return nil
}

func get(c *http.Client, url, accept string) (string, time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", 0, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	d := time.Since(start)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("%s: %s", resp.Status, body)
	}
	return string(body), d, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(i, 0)].Round(100 * time.Microsecond)
}

// kiloNode is node j of cluster i: Ready, in location j/perLoc, with one
// leader hint per location, and addresses inside the mesh's networks.
func kiloNode(cluster, j, perLoc int) framework.KiloNode {
	return framework.KiloNode{
		Name:       fmt.Sprintf("c%d-n%05d", cluster, j),
		Location:   fmt.Sprintf("loc-%03d", j/perLoc),
		Leader:     j%perLoc == 0,
		Endpoint:   fmt.Sprintf("198.18.%d.%d:51820", j/256, j%256),
		InternalIP: fmt.Sprintf("172.%d.%d.%d/16", 16+cluster, j/256, j%256),
		PodCIDR:    fmt.Sprintf("10.%d.%d.0/24", cluster*32+j/256, j%256),
		// kg refreshes last-seen every 30 s; a timestamp ahead keeps the
		// nodes Ready for the whole run without that write traffic.
		LastSeen: time.Now().Add(time.Hour),
	}
}
