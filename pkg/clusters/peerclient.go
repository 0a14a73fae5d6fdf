package clusters

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	sigsjson "sigs.k8s.io/json"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// PeerClient writes Kilo Peers (cluster-scoped) on one member cluster. Reads
// come from the caches (Member.State), or live from Member.List. Each request is bounded by a timeout of its
// own; a request that fails for want of a connection makes the cluster be
// probed at once. Errors keep the answer's code and reason (apierrors.IsConflict
// and the like work) but never its body: see sanitize.
type PeerClient interface {
	// Apply is a server-side apply of peer, creating it if need be;
	// opts.FieldManager is required.
	Apply(ctx context.Context, peer *kilov1alpha1.Peer, opts metav1.ApplyOptions) (WrittenPeer, error)
	// Update replaces a Peer at its resourceVersion: an apply cannot
	// remove fields someone else set.
	Update(ctx context.Context, peer *kilov1alpha1.Peer, opts metav1.UpdateOptions) (WrittenPeer, error)
	// Delete deletes a Peer; use opts.Preconditions (UID, resourceVersion)
	// to delete only the object that was planned for deletion.
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	// Connection names the connection the client writes through, without
	// credentials: clients of one connection share its rate limit.
	Connection() string
}

type peerClient struct {
	c *cluster
}

var _ PeerClient = (*peerClient)(nil)

func (p *peerClient) Apply(ctx context.Context, peer *kilov1alpha1.Peer, opts metav1.ApplyOptions) (WrittenPeer, error) {
	body, err := p.prepare(peer)
	if err != nil {
		return WrittenPeer{}, err
	}
	patchOpts := opts.ToPatchOptions()
	return p.result(ctx, p.c.peerApply.Patch(types.ApplyPatchType).Resource(kilov1alpha1.PeerResource.Resource).Name(peer.Name).
		VersionedParams(&patchOpts, metav1.ParameterCodec).Body(body))
}

func (p *peerClient) Update(ctx context.Context, peer *kilov1alpha1.Peer, opts metav1.UpdateOptions) (WrittenPeer, error) {
	body, err := p.prepare(peer)
	if err != nil {
		return WrittenPeer{}, err
	}
	return p.result(ctx, p.c.peerApply.Put().Resource(kilov1alpha1.PeerResource.Resource).Name(peer.Name).
		VersionedParams(&opts, metav1.ParameterCodec).Body(body))
}

func (p *peerClient) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if err := p.c.live(); err != nil {
		return err
	}
	err := p.c.peerWrite.Delete(ctx, name, opts)
	p.observe(err)
	return memberaccess.Sanitize(err)
}

func (p *peerClient) Connection() string { return p.c.name() }

// prepare checks the connection is still the mesh's and encodes peer, with
// its kind, in JSON.
func (p *peerClient) prepare(peer *kilov1alpha1.Peer) ([]byte, error) {
	if err := p.c.live(); err != nil {
		return nil, err
	}
	typed := *peer // the plan's Peers are shared: a shallow copy for the kind
	typed.APIVersion, typed.Kind = kilov1alpha1.SchemeGroupVersion.String(), kilov1alpha1.PeerKind
	body, err := json.Marshal(&typed)
	if err != nil {
		return nil, fmt.Errorf("encoding Peer %s: %w", peer.Name, err)
	}
	return body, nil
}

// result sends req and reads the Peer it answers.
func (p *peerClient) result(ctx context.Context, req *rest.Request) (WrittenPeer, error) {
	body, err := req.Do(ctx).Raw()
	p.observe(err)
	if err != nil {
		return WrittenPeer{}, memberaccess.Sanitize(err)
	}
	return readWritten(body)
}

// WrittenPeer is a Peer write's answer, read for what a pass needs of it:
// decoding every answer whole (its allowed IPs, its managed fields) was a
// tenth of the server's CPU during a change at 100 member clusters.
type WrittenPeer struct {
	// ResourceVersion is the one the write left.
	ResourceVersion string
	// Keepalive and Endpoint say whether the live Peer holds these
	// optional fields, which an apply cannot remove when someone else
	// set them.
	Keepalive, Endpoint bool

	// body is the whole answer, which Live decodes.
	body []byte
}

// writtenAnswer is the part of a Peer's JSON a WrittenPeer reads.
type writtenAnswer struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Spec struct {
		PersistentKeepalive int       `json:"persistentKeepalive"`
		Endpoint            *struct{} `json:"endpoint"`
	} `json:"spec"`
}

// readWritten reads a write's answer, which must be a Peer.
func readWritten(body []byte) (WrittenPeer, error) {
	var a writtenAnswer
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &a); err != nil {
		return WrittenPeer{}, fmt.Errorf("reading the answer to a Peer write: %w", err)
	}
	if a.APIVersion != kilov1alpha1.SchemeGroupVersion.String() || a.Kind != kilov1alpha1.PeerKind {
		return WrittenPeer{}, fmt.Errorf("the answer to a Peer write is not a Peer")
	}
	return WrittenPeer{ResourceVersion: a.Metadata.ResourceVersion, Keepalive: a.Spec.PersistentKeepalive != 0,
		Endpoint: a.Spec.Endpoint != nil, body: body}, nil
}

// Live decodes the whole Peer the write answered.
func (w WrittenPeer) Live() (*kilov1alpha1.Peer, error) {
	var out kilov1alpha1.Peer
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(w.body, &out); err != nil {
		return nil, fmt.Errorf("reading the answer to a Peer write: %w", err)
	}
	return &out, nil
}

func (p *peerClient) observe(err error) { p.c.observe(err) }
