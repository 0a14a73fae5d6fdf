//go:build integration

package clusters

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestCacheMemory measures the heap the Node cache takes per 1,000 nodes
// that look like real ones (images, nodeInfo, resources, all conditions,
// managedFields), with the transform and, for comparison, without.
func TestCacheMemory(t *testing.T) {
	const batch = 1000
	env := framework.StartT(t, framework.Options{Clusters: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := &harness{t: t, env: env, ctx: ctx}

	ns := h.namespace(t)
	h.putSecret(t, ns, "member", h.kubeconfig(member1, framework.UserAdmin))
	mesh := newMesh(ns, "mem", localEntry("host"), remoteEntry("member", "member"))
	m, _ := h.startManager(t)
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "usable", allUsable(m, mesh))

	writer := env.RESTConfig(member1, framework.UserAdmin)
	writer.QPS, writer.Burst = 1000, 1000
	client := kubernetes.NewForConfigOrDie(writer)
	cached := func(n int) func() error {
		return func() error {
			if got := m.Snapshot(mesh)["member"].Nodes.Len(); got < n {
				return fmt.Errorf("%d nodes cached", got)
			}
			return nil
		}
	}

	start := time.Now()
	createRealisticNodes(t, ctx, client, 0, batch)
	t.Logf("created %d nodes in %s", batch, time.Since(start).Round(time.Millisecond))
	framework.EventuallyT(t, 60*time.Second, "first batch cached", cached(batch))
	heap1 := heapInUse()
	createRealisticNodes(t, ctx, client, batch, batch)
	framework.EventuallyT(t, 60*time.Second, "second batch cached", cached(2*batch))
	heap2 := heapInUse()
	slim := heap2 - heap1
	t.Logf("Node cache with transform: %.2f MiB per %d nodes (%d bytes per node)", mib(slim), batch, slim/batch)

	// The same nodes in a plain informer, for comparison.
	heap3 := heapInUse()
	factory := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(env.RESTConfig(member1, framework.UserAdmin)), 0)
	plain := factory.Core().V1().Nodes().Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), plain.HasSynced) {
		t.Fatal("plain informer did not sync")
	}
	heap4 := heapInUse()
	full := (heap4 - heap3) / 2
	runtime.KeepAlive(plain)
	close(stop)
	factory.Shutdown()
	t.Logf("Node cache without transform: %.2f MiB per %d nodes (%d bytes per node); the transform keeps %.0f%%",
		mib(full), batch, full/batch, 100*float64(slim)/float64(full))
	if slim >= full/2 {
		t.Errorf("the transform saves too little: %d vs %d bytes per %d nodes", slim, full, batch)
	}
}

func heapInUse() int64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// createRealisticNodes creates nodes first..first+n-1 with the status a
// kubelet would report, through 16 workers.
func createRealisticNodes(t *testing.T, ctx context.Context, client kubernetes.Interface, first, n int) {
	t.Helper()
	var next atomic.Int64
	next.Store(int64(first))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= first+n {
					return
				}
				if err := createRealisticNode(ctx, client, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func createRealisticNode(ctx context.Context, client kubernetes.Interface, i int) error {
	name := fmt.Sprintf("mem-node-%05d", i)
	ip := fmt.Sprintf("10.%d.%d.%d", 20+i/65536, (i/256)%256, i%256)
	node, err := framework.KiloNode{
		Name:        name,
		PodCIDR:     fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256),
		InternalIP:  ip + "/16",
		Endpoint:    ip + ":51820",
		Location:    fmt.Sprintf("zone-%d", i%3),
		RegionLabel: "eu-west-1",
		Labels: map[string]string{
			"kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m5.xlarge",
			"topology.kubernetes.io/zone": fmt.Sprintf("eu-west-1%c", 'a'+i%3), "node-role.kubernetes.io/worker": "",
		},
		Annotations: map[string]string{
			"node.alpha.kubernetes.io/ttl":                           "0",
			"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			"csi.volume.kubernetes.io/nodeid":                        fmt.Sprintf(`{"ebs.csi.aws.com":"i-%017d"}`, i),
		},
	}.Build()
	if err != nil {
		return err
	}
	status := node.Status
	now := metav1.Now()
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		status.Conditions = append(status.Conditions, corev1.NodeCondition{
			Type: c, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficient" + string(c),
			Message: "kubelet has sufficient resources available", LastHeartbeatTime: now, LastTransitionTime: now,
		})
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16094280Ki"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("101430960Ki"),
		"hugepages-1Gi": resource.MustParse("0"), "hugepages-2Mi": resource.MustParse("0"),
	}
	status.Capacity, status.Allocatable = resources, resources
	for j := range 40 {
		status.Images = append(status.Images, corev1.ContainerImage{
			Names: []string{
				fmt.Sprintf("registry.example.com/team-%d/service-%d@sha256:%064x", j%7, j, j*7919+i),
				fmt.Sprintf("registry.example.com/team-%d/service-%d:v1.%d.%d", j%7, j, j, i%10),
			},
			SizeBytes: int64(20_000_000 + j*1_000_000),
		})
	}
	status.NodeInfo = corev1.NodeSystemInfo{
		MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("ec2%029x", i), BootID: fmt.Sprintf("%032x", i*31),
		KernelVersion: "6.1.0-18-cloud-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://2.0.0",
		KubeletVersion: framework.KubeVersion, OperatingSystem: "linux", Architecture: "amd64",
	}
	status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
	node.Spec.ProviderID = fmt.Sprintf("aws:///eu-west-1a/i-%017d", i)
	node.Status = corev1.NodeStatus{}
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: "kubelet"})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	if _, err := framework.SetNodeStatus(ctx, client.CoreV1().Nodes(), created, status, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		return fmt.Errorf("setting the status of node %s: %w", name, err)
	}
	return nil
}
