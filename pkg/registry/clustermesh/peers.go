package clustermesh

import (
	"bytes"
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// PeersREST serves clustermeshes/NAME/peers: the desired Peers of every
// member cluster; with ?cluster= those of one cluster as a list of Kilo
// Peers that kubectl apply takes as it is, in JSON or YAML as the client
// accepts; with ?format= as WireGuard or DOT text. kubectl get prints it as
// a table of one row per Peer.
type PeersREST struct {
	meshes  rest.Getter
	planner Planner
}

var (
	_ rest.GetterWithOptions = &PeersREST{}
	_ rest.Storage           = &PeersREST{}
	_ rest.TableConvertor    = &PeersREST{}
)

// NewPeersREST serves the desired Peers of the meshes in store.
func NewPeersREST(store *REST, p Planner) *PeersREST {
	return &PeersREST{meshes: store, planner: p}
}

// New returns an empty view.
func (r *PeersREST) New() runtime.Object { return &meshv1alpha1.ClusterMeshPeers{} }

// Destroy is a no-op: the view owns no storage.
func (r *PeersREST) Destroy() {}

// NewGetOptions declares the query parameters cluster and format.
func (r *PeersREST) NewGetOptions() (runtime.Object, bool, string) {
	return &meshv1alpha1.ClusterMeshPeersOptions{}, false, ""
}

// Get computes the plan of mesh name and renders its Peers as asked.
func (r *PeersREST) Get(ctx context.Context, name string, options runtime.Object) (runtime.Object, error) {
	opts, ok := options.(*meshv1alpha1.ClusterMeshPeersOptions)
	if !ok {
		return nil, fmt.Errorf("unexpected options %T", options)
	}
	mesh, err := getMesh(ctx, r.meshes, name, opts.Cluster)
	if err != nil {
		return nil, err
	}
	p, err := r.planner.Plan(mesh)
	if err != nil {
		return nil, fmt.Errorf("planning %s/%s: %w", mesh.Namespace, mesh.Name, err)
	}
	switch opts.Format {
	case "":
		if opts.Cluster == "" {
			if size := allPeersSize(p); size > maxAllPeersBytes {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the Peers of every cluster of mesh %s would be an answer of about %d MB, more than the %d MB "+
					"this server answers at once; ask for one cluster's: ?cluster=NAME (kubectl mesh peers %s --cluster NAME)",
					mesh.Name, size>>20, maxAllPeersBytes>>20, mesh.Name))
			}
			return allPeers(mesh, p), nil
		}
		return &peerList{meshNamespace: mesh.Namespace, meshName: mesh.Name, cluster: opts.Cluster, plan: p}, nil
	case meshv1alpha1.PeersFormatWireGuard:
		if opts.Cluster == "" {
			return nil, apierrors.NewBadRequest("format=wireguard needs cluster=<name>: a configuration belongs to one cluster")
		}
		return &textStream{contentType: "text/plain; charset=utf-8", body: planner.RenderWireGuard(p, opts.Cluster)}, nil
	case meshv1alpha1.PeersFormatDOT:
		return &textStream{contentType: "text/vnd.graphviz; charset=utf-8", body: planner.RenderDOT(p)}, nil
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unknown format %q: use %q or %q", opts.Format,
			meshv1alpha1.PeersFormatWireGuard, meshv1alpha1.PeersFormatDOT))
	}
}

func allPeers(mesh *meshv1alpha1.ClusterMesh, p *planner.Plan) *meshv1alpha1.ClusterMeshPeers {
	out := &meshv1alpha1.ClusterMeshPeers{}
	out.Name, out.Namespace = mesh.Name, mesh.Namespace
	for _, c := range mesh.Spec.Clusters {
		out.Targets = append(out.Targets, meshv1alpha1.TargetPeers{Cluster: c.Name, Peers: peerValues(p.DesiredPeers[c.Name])})
	}
	return out
}

// maxAllPeersBytes bounds the peers view of a whole mesh, which grows with
// the square of its clusters: 23 MB of JSON at 100 clusters of one
// location each, 148 MB at 250, held several times over while it is
// encoded, in the memory every tenant shares. One cluster's view is a
// fraction of it.
const maxAllPeersBytes = 32 << 20

// allPeersSize estimates the JSON of the peers view of every cluster: a
// location's Peer of 100 nodes is about 2.3 KB, 18 bytes an allowed IP and
// the rest its metadata.
func allPeersSize(p *planner.Plan) int64 {
	var size int64
	for _, peers := range p.DesiredPeers {
		for _, peer := range peers.All() {
			size += 600 + 18*int64(len(peer.Spec.AllowedIPs))
		}
	}
	return size
}

// peerValues copies the plan's Peers into the view's list of values. The
// copies are shallow: their labels, annotations and lists stay the plan's,
// which is shared and read-only, and the encoder only reads them.
func peerValues(peers planner.PeerList) []kilov1alpha1.Peer {
	if peers.Len() == 0 {
		return nil
	}
	out := make([]kilov1alpha1.Peer, peers.Len())
	for i, p := range peers.All() {
		out[i] = *p
	}
	return out
}

// textStream is a rendered text view (WireGuard configuration, DOT graph).
type textStream struct {
	contentType string
	body        []byte
}

var _ rest.ResourceStreamer = &textStream{}

func (s *textStream) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (s *textStream) DeepCopyObject() runtime.Object {
	return &textStream{contentType: s.contentType, body: bytes.Clone(s.body)}
}

func (s *textStream) InputStream(context.Context, string, string) (io.ReadCloser, bool, string, error) {
	return io.NopCloser(bytes.NewReader(s.body)), false, s.contentType, nil
}
