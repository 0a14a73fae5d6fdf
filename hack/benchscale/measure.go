package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/internal/benchenv"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// timeViews asks the first mesh's views through the aggregation layer, as
// kubectl mesh does, and times each answer.
func (b *bench) timeViews(ctx context.Context) (map[string][]time.Duration, error) {
	cfg := rest.CopyConfig(benchenv.AdminConfig(b.env, framework.HostCluster))
	cfg.Timeout = time.Minute
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	m := b.meshes[0]
	out := map[string][]time.Duration{}
	for k := range len(viewNames) * b.views {
		view := viewNames[k%len(viewNames)]
		req := client.Discovery().RESTClient().Get()
		if sub, _, ok := strings.Cut(view, "?cluster="); ok {
			req = req.AbsPath("/apis", meshv1alpha1.GroupName, "v1alpha1", "namespaces", m.namespace, "clustermeshes", m.name, sub).
				Param("cluster", clusterName(m.members[0]))
		} else {
			req = req.AbsPath("/apis", meshv1alpha1.GroupName, "v1alpha1", "namespaces", m.namespace, "clustermeshes", m.name, view)
		}
		start := time.Now()
		raw, err := req.DoRaw(ctx)
		if apierrors.IsBadRequest(err) && view == "peers" {
			// Too large to answer at once: the server says so.
			if k < len(viewNames) {
				log.Printf("view %s refused after %s: %v", view, time.Since(start).Round(time.Millisecond), err)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("view %s: %w", view, err)
		}
		out[view] = append(out[view], time.Since(start))
		if k < len(viewNames) {
			log.Printf("view %s: %d bytes: %.200s", view, len(raw), raw)
		}
	}
	return out, nil
}

// viewNames are the views timed: the plan, the Peers of one cluster (as
// kubectl mesh peers --cluster asks), and every Peer of the mesh.
var viewNames = []string{"plan", "peers?cluster=FIRST", "peers"}

// atRestFigures is what the server and the members did while nothing changed but
// Kilo's check-in stream.
type atRestFigures struct {
	window                               time.Duration
	memberWrites, peerWrites, meshWrites float64 // per minute
	cpu                                  map[string]time.Duration
	server                               string // the server's command in cpu
	checkIns                             int64
}

// atRest counts the writes and the CPU over -steady with nothing changing.
func (b *bench) atRest(ctx context.Context) (atRestFigures, error) {
	time.Sleep(5 * time.Second) // the last change's echoes
	count := func() (members, peers, meshes float64, checkIns int64, err error) {
		c, err := b.fleet.counts(ctx)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		m, err := framework.Scrape(ctx, b.direct())
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if peers, err = framework.MetricSum(m, "kilo_mesh_peer_writes_total"); err != nil {
			return 0, 0, 0, 0, err
		}
		if meshes, err = framework.RequestWrites(m, meshv1alpha1.GroupName, "clustermeshes"); err != nil {
			return 0, 0, 0, 0, err
		}
		return float64(c.Writes), peers, meshes, c.CheckIns, nil
	}
	w0, p0, m0, c0, err := count()
	if err != nil {
		return atRestFigures{}, err
	}
	cpu0 := benchenv.CPUByCommand("benchmark")
	if b.profiles != "" {
		wait := benchenv.CPUProfile(ctx, b.direct(), min(b.steady, 30*time.Second), b.profiles+"/cpu-rest.pprof")
		defer wait()
	}
	time.Sleep(b.steady)
	cpu1 := benchenv.CPUByCommand("benchmark")
	w1, p1, m1, c1, err := count()
	if err != nil {
		return atRestFigures{}, err
	}
	per := b.steady.Minutes()
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", b.server.Pid()))
	return atRestFigures{window: b.steady, memberWrites: (w1 - w0) / per, peerWrites: (p1 - p0) / per, meshWrites: (m1 - m0) / per,
		cpu: benchenv.CPUUsed(cpu0, cpu1), server: strings.TrimSpace(string(comm)), checkIns: c1 - c0}, nil
}

func (r atRestFigures) print(c config) {
	fmt.Printf("| write requests at the members per minute at rest (%s, check-ins on) | %.1f |\n", r.window, r.memberWrites)
	fmt.Printf("| the server's Peer writes per minute at rest | %.1f |\n", r.peerWrites)
	fmt.Printf("| ClusterMesh writes per minute at rest | %.1f |\n", r.meshWrites)
	fmt.Printf("| CPU at rest, share of one core (of %d) | %s |\n", runtime.NumCPU(), benchenv.CPUShares(r.cpu, r.window))
	if r.checkIns > 0 {
		fmt.Printf("| check-ins at rest (every node every %s) | %d, %.0f a second |\n", c.checkIns, r.checkIns, float64(r.checkIns)/r.window.Seconds())
		fmt.Printf("| server CPU per check-in, its idle cost included | %s |\n", (r.cpu[r.server] / time.Duration(r.checkIns)).Round(time.Microsecond))
		fmt.Printf("| hollow members' CPU per check-in, their idle cost included | %s |\n", (r.cpu["hollowmembers"] / time.Duration(r.checkIns)).Round(time.Microsecond))
	}
}

// logConditions logs the first mesh's conditions at the end.
func (b *bench) logConditions(ctx context.Context) error {
	m := b.meshes[0]
	u, err := dynamic.NewForConfigOrDie(benchenv.AdminConfig(b.env, framework.HostCluster)).Resource(framework.ClusterMeshGVR).
		Namespace(m.namespace).Get(ctx, m.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		c, _ := c.(map[string]any)
		log.Printf("mesh %s/%s: %v=%v %v: %.200v", m.namespace, m.name, c["type"], c["status"], c["reason"], c["message"])
	}
	return nil
}

// endProfiles writes the server's heap and goroutine profiles.
func (b *bench) endProfiles(ctx context.Context) {
	if err := benchenv.HeapProfile(ctx, b.direct(), b.profiles+"/heap.pprof"); err != nil {
		log.Printf("heap profile: %v", err)
	}
	if err := benchenv.Profile(ctx, b.direct(), "goroutine", nil, b.profiles+"/goroutine.pprof"); err != nil {
		log.Printf("goroutine profile: %v", err)
	}
}
