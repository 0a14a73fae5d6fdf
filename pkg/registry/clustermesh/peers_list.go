package clustermesh

import (
	"bytes"
	"context"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// peerList is the peers view with ?cluster=: the desired Peers of one
// member cluster as a v1 List of Kilo Peers that kubectl apply takes as it
// is. It is streamed as rendered, since its kinds are not of the mesh
// group and the generic encoder would not convert them; the encoding
// follows the request's Accept header (JSON, what kubectl get --raw asks
// for and the default, or YAML). As a Table (kubectl get) it is one row per
// Peer, like the view of every cluster.
type peerList struct {
	meshNamespace, meshName string
	cluster                 string
	// plan is the shared, read-only plan the Peers come from.
	plan *planner.Plan
}

var _ rest.ResourceStreamer = &peerList{}

// peerListMediaTypes are the encodings of a peerList, the default first.
var peerListMediaTypes = []runtime.SerializerInfo{
	{MediaType: runtime.ContentTypeJSON, MediaTypeType: "application", MediaTypeSubType: "json"},
	{MediaType: runtime.ContentTypeYAML, MediaTypeType: "application", MediaTypeSubType: "yaml"},
}

func (l *peerList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the view; the plan stays shared, being read-only.
func (l *peerList) DeepCopyObject() runtime.Object {
	c := *l
	return &c
}

// InputStream renders the list in the encoding the client accepts first.
func (l *peerList) InputStream(_ context.Context, _, accept string) (io.ReadCloser, bool, string, error) {
	chosen, ok := negotiation.NegotiateMediaTypeOptions(accept, peerListMediaTypes, negotiation.DefaultEndpointRestrictions)
	if !ok {
		return nil, false, "", negotiation.NewNotAcceptableError([]string{runtime.ContentTypeJSON, runtime.ContentTypeYAML})
	}
	format := planner.PeerListJSON
	if chosen.Accepted.MediaType == runtime.ContentTypeYAML {
		format = planner.PeerListYAML
	}
	body, err := planner.RenderPeerList(l.plan, l.cluster, format)
	if err != nil {
		return nil, false, "", err
	}
	return io.NopCloser(bytes.NewReader(body)), false, chosen.Accepted.MediaType, nil
}
