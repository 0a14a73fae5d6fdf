//go:build integration

package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plancache"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// harness runs reconcilers in the test process against real
// kube-apiservers: the member clusters of a framework environment, the
// real clusters.Manager and plan cache, and ClusterMeshes served by cluster 0
// through a stand-in CRD (testdata/clustermeshes-crd.yaml).
type harness struct {
	env      *framework.Env
	ns       string
	mgr      *clusters.Manager
	plans    *plancache.Cache
	meshes   cache.SharedIndexInformer
	meshREST rest.Interface
	ctx      context.Context
}

func newHarness(t *testing.T, n int) *harness {
	t.Helper()
	return newGatedHarness(t, n, nil)
}

// newGatedHarness is newHarness whose member connections follow each
// stored mesh only once gate(mesh) returns (nil: at once, the server's
// wiring): a test orders the reconciler's pass and Follow with it.
func newGatedHarness(t *testing.T, n int, gate func(*meshv1alpha1.ClusterMesh)) *harness {
	t.Helper()
	env := framework.StartT(t, framework.Options{Clusters: n})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &harness{env: env, ctx: ctx}

	if _, _, err := env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "apply", "-f",
		filepath.Join("testdata", "clustermeshes-crd.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitCRDEstablished(ctx, framework.HostCluster, "clustermeshes.mesh.kilo.squat.ai"); err != nil {
		t.Fatal(err)
	}
	var err error
	if h.ns, err = env.NewNamespace(ctx, "it"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		if _, err := env.CreateKubeconfigSecret(ctx, h.ns, secretName(i), i, framework.UserAdmin); err != nil {
			t.Fatal(err)
		}
	}

	scheme := runtime.NewScheme()
	if err := meshv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.RESTConfig(framework.HostCluster, framework.UserAdmin))
	cfg.GroupVersion = &meshv1alpha1.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if h.meshREST, err = rest.RESTClientFor(cfg); err != nil {
		t.Fatal(err)
	}

	if h.mgr, err = clusters.NewManager(clusters.Config{
		Local:         env.RESTConfig(framework.HostCluster, framework.UserAdmin),
		ProbeInterval: time.Second,
		ServerPolicy:  memberaccess.StaticServerPolicy([]netip.Prefix{netip.MustParsePrefix(framework.LoopbackServers[0])}),
	}); err != nil {
		t.Fatal(err)
	}
	h.meshes = cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			out := &meshv1alpha1.ClusterMeshList{}
			err := h.meshREST.Get().Resource(meshResource).VersionedParams(&o, metav1.ParameterCodec).Do(ctx).Into(out)
			return out, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return h.meshREST.Get().Resource(meshResource).VersionedParams(&o, metav1.ParameterCodec).Watch(ctx)
		},
	}, &meshv1alpha1.ClusterMesh{}, 0, cache.Indexers{})
	// The server's wiring: the member connections and the plan cache
	// follow the meshes.
	if err := h.followMeshes(gate); err != nil {
		t.Fatal(err)
	}
	if h.plans, err = plancache.New(plancache.Config{Members: h.mgr}); err != nil {
		t.Fatal(err)
	}
	if err := h.plans.FollowMeshes(h.meshes); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(cancel)
	wg.Go(func() { h.mgr.Run(ctx) })
	wg.Go(func() { h.meshes.RunWithContext(ctx) })
	return h
}

// followMeshes wires the member connections to the meshes, through gate
// when there is one.
func (h *harness) followMeshes(gate func(*meshv1alpha1.ClusterMesh)) error {
	if gate == nil {
		return h.mgr.FollowMeshes(h.meshes)
	}
	follow := func(obj any) {
		mesh := obj.(*meshv1alpha1.ClusterMesh)
		gate(mesh)
		h.mgr.Follow(mesh)
	}
	_, err := h.meshes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    follow,
		UpdateFunc: func(_, obj any) { follow(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			h.mgr.Forget(obj.(*meshv1alpha1.ClusterMesh))
		},
	})
	return err
}

func secretName(i int) string { return fmt.Sprintf("cluster-%d-kubeconfig", i) }

func clusterName(i int) string { return fmt.Sprintf("cluster-%d", i) }

// reconciler starts a reconciler until the test ends or stop is called;
// prepare runs on it before it starts.
func (h *harness) reconciler(t *testing.T, identity string, tune func(*Options), prepare ...func(*Reconciler)) (r *Reconciler, stop func()) {
	t.Helper()
	opts := NewOptions()
	opts.LeaderElection.ResourceNamespace = h.ns
	opts.LeaderElection.LeaseDuration.Duration = 3 * time.Second
	opts.LeaderElection.RenewDeadline.Duration = 2 * time.Second
	opts.LeaderElection.RetryPeriod.Duration = 500 * time.Millisecond
	if tune != nil {
		tune(opts)
	}
	r, err := New(Config{
		Options:  *opts,
		Meshes:   h.meshes,
		Clusters: h.mgr,
		Planner:  h.plans,
		MeshREST: h.meshREST,
		Kube:     h.env.Client(framework.HostCluster, framework.UserAdmin),
		Identity: identity,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range prepare {
		f(r)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("reconciler %s: %v", identity, err)
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return r, stop
}

// nodes creates Kilo nodes on cluster i: location a (a1 leads, a2) and
// location b (b1). Their last-seen lies an hour ahead, so they stay Ready
// without a kg (Kilo counts a clock ahead of its own as checked in).
func (h *harness) nodes(t *testing.T, i int) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for _, k := range []framework.KiloNode{
		{Name: fmt.Sprintf("c%d-a1", i), Location: "a", Endpoint: fmt.Sprintf("203.0.113.%d:51820", 10*i+1), PodCIDR: fmt.Sprintf("10.%d.1.0/24", 10+i)},
		{Name: fmt.Sprintf("c%d-a2", i), Location: "a", Endpoint: fmt.Sprintf("203.0.113.%d:51820", 10*i+2), PodCIDR: fmt.Sprintf("10.%d.2.0/24", 10+i)},
		{Name: fmt.Sprintf("c%d-b1", i), Location: "b", Endpoint: fmt.Sprintf("203.0.113.%d:51820", 10*i+3), PodCIDR: fmt.Sprintf("10.%d.3.0/24", 10+i)},
	} {
		// With an internal IP a node joins its location's group.
		k.InternalIP = fmt.Sprintf("192.168.%d.%s/24", i, k.Endpoint[len("203.0.113."):strings.Index(k.Endpoint, ":")])
		k.LastSeen = time.Now().Add(time.Hour)
		n, err := h.env.CreateKiloNode(h.ctx, i, k)
		if err != nil {
			t.Fatal(err)
		}
		keys[n.Name] = n.Annotations[kilov1alpha1.AnnotationKey]
	}
	return keys
}

// createMesh creates a mesh over clusters 0..n-1 (0 local).
func (h *harness) createMesh(t *testing.T, name string, n int) *meshv1alpha1.ClusterMesh {
	t.Helper()
	mesh := &meshv1alpha1.ClusterMesh{
		TypeMeta: metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMesh"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: h.ns,
			Name:      name,
			// The CRD stands in for the server, without its admission: this is
			// the record admission leaves when an admin (Peer rights) writes it.
			Annotations: map[string]string{meshv1alpha1.AnnotationHostAccess: meshv1alpha1.HostAccessPeerRights},
		},
	}
	for i := range n {
		e := meshv1alpha1.ClusterEntry{
			Name:          clusterName(i),
			PodCIDRs:      []string{fmt.Sprintf("10.%d.0.0/16", 10+i)},
			WireguardCIDR: fmt.Sprintf("10.%d.0.0/16", 40+i),
		}
		if i == 0 {
			e.Local = true
		} else {
			e.KubeconfigSecretRef = &meshv1alpha1.SecretKeyReference{Name: secretName(i)}
		}
		mesh.Spec.Clusters = append(mesh.Spec.Clusters, e)
	}
	meshv1alpha1.SetDefaults(mesh)
	out := &meshv1alpha1.ClusterMesh{}
	if err := h.meshREST.Post().Namespace(h.ns).Resource(meshResource).Body(mustJSON(t, mesh)).Do(h.ctx).Into(out); err != nil {
		t.Fatalf("creating mesh %s: %v", name, err)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mesh reads a mesh from the API; nil when it is gone.
func (h *harness) mesh(t *testing.T, name string) *meshv1alpha1.ClusterMesh {
	t.Helper()
	out := &meshv1alpha1.ClusterMesh{}
	err := h.meshREST.Get().Namespace(h.ns).Resource(meshResource).Name(name).Do(h.ctx).Into(out)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading mesh %s: %v", name, err)
	}
	return out
}

func (h *harness) deleteMesh(t *testing.T, name string) {
	t.Helper()
	if err := h.meshREST.Delete().Namespace(h.ns).Resource(meshResource).Name(name).Do(h.ctx).Error(); err != nil {
		t.Fatalf("deleting mesh %s: %v", name, err)
	}
}

// peers lists the Peers on cluster i, by name; with uid, only the mesh's.
func (h *harness) peers(t *testing.T, i int, uid string) map[string]*kilov1alpha1.Peer {
	t.Helper()
	opts := metav1.ListOptions{}
	if uid != "" {
		opts.LabelSelector = planner.LabelMeshUID + "=" + uid
	}
	list, err := h.env.Dynamic(i, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).List(h.ctx, opts)
	if err != nil {
		t.Fatalf("listing Peers of cluster %d: %v", i, err)
	}
	out := map[string]*kilov1alpha1.Peer{}
	for _, u := range list.Items {
		p := &kilov1alpha1.Peer{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			t.Fatal(err)
		}
		out[p.Name] = p
	}
	return out
}

// createPeer creates a Peer on cluster i as someone other than the mesh.
func (h *harness) createPeer(t *testing.T, i int, p *kilov1alpha1.Peer) *kilov1alpha1.Peer {
	t.Helper()
	p.TypeMeta = metav1.TypeMeta{APIVersion: kilov1alpha1.SchemeGroupVersion.String(), Kind: kilov1alpha1.PeerKind}
	if p.Spec.PublicKey == "" {
		_, key, err := framework.NewWireGuardKey()
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.PublicKey = key
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	res := h.env.Dynamic(i, framework.UserAdmin).Resource(kilov1alpha1.PeerResource)
	u, err := res.Create(h.ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Peer %s on cluster %d: %v", p.Name, i, err)
	}
	out := &kilov1alpha1.Peer{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// matchesPlan checks that every reachable cluster holds exactly the
// managed Peers the plan desires, as the plan has them.
func (h *harness) matchesPlan(t *testing.T, mesh *meshv1alpha1.ClusterMesh, n int) error {
	t.Helper()
	plan, err := h.plans.Plan(mesh)
	if err != nil {
		return err
	}
	var problems []string
	for i := range n {
		have := h.peers(t, i, string(mesh.UID))
		want := plan.DesiredPeers[clusterName(i)]
		if want.Len() == 0 {
			problems = append(problems, fmt.Sprintf("cluster %d: the plan desires no Peer yet", i))
		}
		for _, w := range want.All() {
			p := have[w.Name]
			if p == nil {
				problems = append(problems, fmt.Sprintf("cluster %d: missing %s", i, w.Name))
				continue
			}
			if !equality.Semantic.DeepEqual(p.Spec, w.Spec) {
				problems = append(problems, fmt.Sprintf("cluster %d: %s spec %+v, want %+v", i, w.Name, p.Spec, w.Spec))
			}
			delete(have, w.Name)
		}
		for name := range have {
			problems = append(problems, fmt.Sprintf("cluster %d: unexpected %s", i, name))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// peerWrites reads the write requests for Peers kube-apiserver i served.
func (h *harness) peerWrites(t *testing.T, i int) float64 {
	t.Helper()
	scrape, err := framework.Scrape(h.ctx, h.env.RESTConfig(i, framework.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	w, err := framework.RequestWrites(scrape, kilov1alpha1.GroupName, "peers")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// events returns the messages of the mesh's events with reason.
func (h *harness) events(t *testing.T, mesh, reason string) []string {
	t.Helper()
	list, err := h.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Events(h.ns).List(h.ctx,
		metav1.ListOptions{FieldSelector: "involvedObject.name=" + mesh + ",reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Message)
	}
	return out
}
