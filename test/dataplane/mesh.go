package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// ApplyMesh makes the bed's ClusterMesh join exactly the given clusters
// (creating it, its namespace and the member kubeconfig Secrets first).
func (b *Bed) ApplyMesh(ctx context.Context, clusters ...int) error {
	if b.Namespace == "" {
		ns, err := b.Env.NewNamespace(ctx, "dataplane")
		if err != nil {
			return err
		}
		for i := 1; i < Clusters; i++ {
			if _, err := b.Env.CreateKubeconfigSecret(ctx, ns, kubeconfigSecret(i), i, framework.UserAdmin); err != nil {
				return err
			}
		}
		b.Namespace = ns
	}
	mesh := &meshv1alpha1.ClusterMesh{
		TypeMeta:   metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMesh"},
		ObjectMeta: metav1.ObjectMeta{Name: MeshName, Namespace: b.Namespace},
	}
	if b.servicesEnabled() {
		mesh.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
	}
	for _, i := range clusters {
		e := meshv1alpha1.ClusterEntry{
			Name:          ClusterName(i),
			Local:         i == framework.HostCluster,
			PodCIDRs:      podCIDRs(i),
			ServiceCIDR:   serviceCIDR(i).String(),
			WireguardCIDR: wireguardCIDR(i).String(),
		}
		if !e.Local {
			e.KubeconfigSecretRef = &meshv1alpha1.SecretKeyReference{Name: kubeconfigSecret(i)}
		}
		e.BehindNAT = b.declaredNAT(i)
		mesh.Spec.Clusters = append(mesh.Spec.Clusters, e)
	}
	mesh.Spec.RelayCluster = b.relayCluster()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mesh)
	if err != nil {
		return err
	}
	res := b.Env.Dynamic(framework.HostCluster, framework.UserAdmin).Resource(framework.ClusterMeshGVR).Namespace(b.Namespace)
	var cur *unstructured.Unstructured
	// The server writes the mesh's status and finalizers meanwhile: a
	// conflict reads it again, and only the spec is replaced.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		cur, err = res.Get(ctx, MeshName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			cur, err = res.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
		case err == nil:
			cur.Object["spec"] = obj["spec"]
			cur, err = res.Update(ctx, cur, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("applying ClusterMesh %s/%s: %w", b.Namespace, MeshName, err)
	}
	b.mu.Lock()
	b.meshUID = cur.GetUID()
	b.meshClusters = slices.Clone(clusters)
	b.mu.Unlock()
	return nil
}

func kubeconfigSecret(i int) string { return fmt.Sprintf("cluster-%d-kubeconfig", i) }

// MeshClusters are the clusters of the mesh as last applied.
func (b *Bed) MeshClusters() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.meshClusters)
}

// Plan reads the mesh's plan view.
func (b *Bed) Plan(ctx context.Context) (*meshv1alpha1.ClusterMeshPlan, error) {
	raw, err := b.Env.Client(framework.HostCluster, framework.UserAdmin).Discovery().RESTClient().Get().
		AbsPath("/apis", framework.MeshGroup, framework.MeshVersion, "namespaces", b.Namespace, "clustermeshes", MeshName, "plan").
		DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	p := &meshv1alpha1.ClusterMeshPlan{}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("decoding the plan: %w", err)
	}
	return p, nil
}

// ClusterPlan returns the plan of cluster i, nil if absent.
func ClusterPlan(p *meshv1alpha1.ClusterMeshPlan, i int) *meshv1alpha1.ClusterPlan {
	for k := range p.Clusters {
		if p.Clusters[k].Name == ClusterName(i) {
			return &p.Clusters[k]
		}
	}
	return nil
}

// PlaceServices puts each mesh cluster's service address on the node the
// plan names for it: the leader of the group whose Peer carries the
// service CIDR (kube-proxy answers service addresses on every node; here
// only the anchor does, so an answer proves the path through it). It
// returns the anchors by cluster.
func (b *Bed) PlaceServices(ctx context.Context) (map[int]*Node, error) {
	anchors := map[int]*Node{}
	granularity := meshv1alpha1.GranularityLocation
	b.mu.Lock()
	if b.full {
		granularity = meshv1alpha1.GranularityFull
	}
	b.mu.Unlock()
	err := framework.Eventually(ctx, 200*time.Millisecond, 30*time.Second, func(ctx context.Context) error {
		p, err := b.Plan(ctx)
		if err != nil {
			return err
		}
		for _, i := range b.MeshClusters() {
			cp := ClusterPlan(p, i)
			if cp == nil || !cp.Reachable || cp.ExtraNetworksGroup == "" {
				return fmt.Errorf("the plan names no anchor for %s yet", ClusterName(i))
			}
			if cp.Granularity != granularity {
				return fmt.Errorf("the plan still has %s in %s granularity", ClusterName(i), cp.Granularity)
			}
			g := slices.IndexFunc(cp.Groups, func(g meshv1alpha1.GroupPlan) bool { return g.Name == cp.ExtraNetworksGroup })
			if g < 0 {
				return fmt.Errorf("%s: anchor group %s not among the groups", ClusterName(i), cp.ExtraNetworksGroup)
			}
			anchors[i] = b.Node(cp.Groups[g].Leader)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, n := range anchors {
		if err := b.moveService(ctx, i, n); err != nil {
			return nil, err
		}
	}
	return anchors, nil
}

// moveService puts cluster i's service address on node n, and its echo
// server, removing it from where it was.
func (b *Bed) moveService(ctx context.Context, i int, n *Node) error {
	b.mu.Lock()
	old := b.services[i]
	b.mu.Unlock()
	if old == n {
		return nil
	}
	addr := ServiceAddr(i)
	if old != nil {
		b.echo.stop(addr)
		if err := b.underlay.RemoveAddresses(ctx, old.Namespace, "pods", addr); err != nil {
			return err
		}
	}
	if err := b.underlay.AddAddresses(ctx, n.Namespace, "pods", addr); err != nil {
		return err
	}
	if err := b.echo.listen(n.Namespace, n.Name, addr); err != nil {
		return err
	}
	b.mu.Lock()
	b.services[i] = n
	b.mu.Unlock()
	return nil
}

// patchAnnotations merge-patches annotations of node n; a nil value
// removes one.
func (b *Bed) patchAnnotations(ctx context.Context, n *Node, ann map[string]*string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return err
	}
	_, err = b.Env.Client(n.Cluster, framework.UserAdmin).CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func ptr(s string) *string { return &s }

// SetFullGranularity switches every cluster to full granularity, as a
// restart of every kg with --mesh-granularity=full would: each Ready node
// becomes its own group and leader, WireGuard IPs handed out in
// group-name order.
func (b *Bed) SetFullGranularity(ctx context.Context) error {
	for i := range Clusters {
		var names []string
		for _, n := range b.Nodes {
			if n.Cluster == i && n.RunsAgent() {
				names = append(names, n.Name)
			}
		}
		slices.Sort(names) // the order of the groups node:<name>
		for k, name := range names {
			wg := netip.PrefixFrom(nthHost(wireguardCIDR(i), k+1), wireguardCIDR(i).Bits())
			if err := b.patchAnnotations(ctx, b.Node(name), map[string]*string{
				kilov1alpha1.AnnotationGranularity: ptr("full"), // kg --mesh-granularity=full
				kilov1alpha1.AnnotationWireGuardIP: ptr(wg.String()),
			}); err != nil {
				return err
			}
		}
	}
	b.mu.Lock()
	b.full = true
	b.mu.Unlock()
	return nil
}

// Group returns the Kilo group of n: location:<location>, or node:<name>
// under full granularity.
func (b *Bed) Group(n *Node) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.full {
		return "node:" + n.Name
	}
	return "location:" + n.Location
}

// PeerName is the name of the Peer representing n's group on the other
// clusters.
func (b *Bed) PeerName(n *Node) string {
	return planner.PeerName(b.Namespace, MeshName, ClusterName(n.Cluster), b.Group(n))
}

// DeleteManagedPeers deletes, by hand, every Peer the mesh manages on
// cluster i, and returns how many there were.
func (b *Bed) DeleteManagedPeers(ctx context.Context, i int) (int, error) {
	b.mu.Lock()
	uid := b.meshUID
	b.mu.Unlock()
	res := b.Env.Dynamic(i, framework.UserAdmin).Resource(kilov1alpha1.PeerResource)
	list, err := res.List(ctx, metav1.ListOptions{LabelSelector: planner.LabelMeshUID + "=" + string(uid)})
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, p := range list.Items {
		if err := res.Delete(ctx, p.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return len(list.Items), errors.Join(errs...)
}

// touch is the last-seen annotation kg would write now.
func touch() *string { return ptr(strconv.FormatInt(time.Now().Unix(), 10)) }

// DescribePlan summarises the plan for a failure message: each cluster's
// groups (leader, ready or why not) and skipped nodes, and the conflicts
// and warnings.
func (b *Bed) DescribePlan(ctx context.Context) string {
	p, err := b.Plan(ctx)
	if err != nil {
		return err.Error()
	}
	var s strings.Builder
	for _, c := range p.Clusters {
		fmt.Fprintf(&s, "%s: reachable=%t granularity=%s anchor=%s %s\n", c.Name, c.Reachable, c.Granularity, c.ExtraNetworksGroup, c.Error)
		for _, g := range c.Groups {
			fmt.Fprintf(&s, "  group %s leader=%s ready=%t %s %s wireguardIP=%s\n", g.Name, g.Leader, g.Ready, g.Reason, g.Message, g.WireguardIP)
		}
		for _, n := range c.Nodes {
			if !n.Included {
				fmt.Fprintf(&s, "  node %s skipped: %s %s\n", n.Node, n.Reason, n.Message)
			}
		}
	}
	for _, i := range append(p.Conflicts, p.Warnings...) {
		fmt.Fprintf(&s, "issue %s (%s): %s\n", i.Reason, i.Cluster, i.Message)
	}
	return s.String()
}
