package clusters

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

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
	Apply(ctx context.Context, peer *kilov1alpha1.Peer, opts metav1.ApplyOptions) (*kilov1alpha1.Peer, error)
	// Update replaces a Peer at its resourceVersion: an apply cannot
	// remove fields someone else set.
	Update(ctx context.Context, peer *kilov1alpha1.Peer, opts metav1.UpdateOptions) (*kilov1alpha1.Peer, error)
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

func (p *peerClient) Apply(ctx context.Context, peer *kilov1alpha1.Peer, opts metav1.ApplyOptions) (*kilov1alpha1.Peer, error) {
	body, err := p.prepare(peer)
	if err != nil {
		return nil, err
	}
	patchOpts := opts.ToPatchOptions()
	return p.result(ctx, p.c.peerApply.Patch(types.ApplyPatchType).Resource(kilov1alpha1.PeerResource.Resource).Name(peer.Name).
		VersionedParams(&patchOpts, metav1.ParameterCodec).Body(body))
}

func (p *peerClient) Update(ctx context.Context, peer *kilov1alpha1.Peer, opts metav1.UpdateOptions) (*kilov1alpha1.Peer, error) {
	body, err := p.prepare(peer)
	if err != nil {
		return nil, err
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

// result sends req and decodes the Peer it answers.
func (p *peerClient) result(ctx context.Context, req *rest.Request) (*kilov1alpha1.Peer, error) {
	var out kilov1alpha1.Peer
	err := req.Do(ctx).Into(&out)
	p.observe(err)
	if err != nil {
		return nil, memberaccess.Sanitize(err)
	}
	return &out, nil
}

func (p *peerClient) observe(err error) { p.c.observe(err) }
