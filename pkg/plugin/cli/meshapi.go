package cli

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

const meshResource = "clustermeshes"

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
)

func init() {
	if err := meshv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
}

// MeshAPI reads and writes ClusterMeshes and their views through the host
// cluster's kube-apiserver (the aggregation layer), with the caller's own
// credentials: RBAC on the host decides what the caller may see and do.
type MeshAPI struct {
	client rest.Interface
}

// NewMeshAPI returns a client of mesh.kilo.squat.ai/v1alpha1.
func NewMeshAPI(cfg *rest.Config) (*MeshAPI, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &meshv1alpha1.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = codecs.WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = UserAgent
	}
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &MeshAPI{client: c}, nil
}

// Get reads a mesh.
func (m *MeshAPI) Get(ctx context.Context, ns, name string) (*meshv1alpha1.ClusterMesh, error) {
	out := &meshv1alpha1.ClusterMesh{}
	err := m.client.Get().Namespace(ns).Resource(meshResource).Name(name).Do(ctx).Into(out)
	return out, err
}

// List lists the meshes of a namespace (for completion).
func (m *MeshAPI) List(ctx context.Context, ns string) (*meshv1alpha1.ClusterMeshList, error) {
	out := &meshv1alpha1.ClusterMeshList{}
	err := m.client.Get().Namespace(ns).Resource(meshResource).Do(ctx).Into(out)
	return out, err
}

// Plan reads the clustermeshes/NAME/plan view.
func (m *MeshAPI) Plan(ctx context.Context, ns, name string) (*meshv1alpha1.ClusterMeshPlan, error) {
	out := &meshv1alpha1.ClusterMeshPlan{}
	err := m.client.Get().Namespace(ns).Resource(meshResource).Name(name).SubResource("plan").Do(ctx).Into(out)
	return out, err
}

// Peers reads the clustermeshes/NAME/peers view: the desired Peers of every
// member cluster.
func (m *MeshAPI) Peers(ctx context.Context, ns, name string) (*meshv1alpha1.ClusterMeshPeers, error) {
	out := &meshv1alpha1.ClusterMeshPeers{}
	err := m.client.Get().Namespace(ns).Resource(meshResource).Name(name).SubResource("peers").Do(ctx).Into(out)
	return out, err
}

// Services reads the clustermeshes/NAME/services view: what every member
// cluster imports and how every export fared; with cluster, of that cluster.
func (m *MeshAPI) Services(ctx context.Context, ns, name, cluster string) (*meshv1alpha1.ClusterMeshServices, error) {
	req := m.client.Get().Namespace(ns).Resource(meshResource).Name(name).SubResource("services")
	if cluster != "" {
		req = req.Param("cluster", cluster)
	}
	out := &meshv1alpha1.ClusterMeshServices{}
	err := req.Do(ctx).Into(out)
	return out, err
}

// PeersRaw reads the peers view with ?cluster= and ?format= as the server
// renders it (a Peer list, WireGuard or DOT text), accepting the media type
// given.
func (m *MeshAPI) PeersRaw(ctx context.Context, ns, name, cluster, format, accept string) ([]byte, error) {
	req := m.client.Get().Namespace(ns).Resource(meshResource).Name(name).SubResource("peers")
	if cluster != "" {
		req = req.Param("cluster", cluster)
	}
	if format != "" {
		req = req.Param("format", format)
	}
	if accept != "" {
		req = req.SetHeader("Accept", accept)
	}
	// Do, not DoRaw: only Do decodes the server's Status, so that its own
	// text ("cluster "x" is not a member") reaches the user.
	res := req.Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}

// ApplyOptions control Apply.
type ApplyOptions struct {
	// FieldManager owns what the patch sets; fields it set before and
	// leaves out now are removed.
	FieldManager string
	Force        bool
	DryRun       bool
}

// Apply server-side-applies patch (a ClusterMesh apply configuration, JSON
// or YAML) to mesh ns/name.
func (m *MeshAPI) Apply(ctx context.Context, ns, name string, patch []byte, opts ApplyOptions) (*meshv1alpha1.ClusterMesh, error) {
	body, err := yaml.YAMLToJSON(patch)
	if err != nil {
		return nil, fmt.Errorf("encoding the apply configuration: %w", err)
	}
	po := &metav1.PatchOptions{FieldManager: opts.FieldManager, Force: &opts.Force}
	if opts.DryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	out := &meshv1alpha1.ClusterMesh{}
	err = m.client.Patch(types.ApplyPatchType).Namespace(ns).Resource(meshResource).Name(name).
		VersionedParams(po, metav1.ParameterCodec).Body(body).Do(ctx).Into(out)
	return out, err
}

// JSONPatch applies a JSON patch (RFC 6902) to mesh ns/name; its test
// operations make a concurrent change fail the patch instead of being
// overwritten.
func (m *MeshAPI) JSONPatch(ctx context.Context, ns, name string, patch []byte, dryRun bool) (*meshv1alpha1.ClusterMesh, error) {
	po := &metav1.PatchOptions{FieldManager: FieldManager}
	if dryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	out := &meshv1alpha1.ClusterMesh{}
	err := m.client.Patch(types.JSONPatchType).Namespace(ns).Resource(meshResource).Name(name).
		VersionedParams(po, metav1.ParameterCodec).Body(patch).Do(ctx).Into(out)
	return out, err
}
