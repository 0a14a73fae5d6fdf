package clusters

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

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
	u, err := p.prepare(peer)
	if err != nil {
		return nil, err
	}
	return p.result(p.c.peerWrite.Apply(ctx, peer.Name, u, opts))
}

func (p *peerClient) Update(ctx context.Context, peer *kilov1alpha1.Peer, opts metav1.UpdateOptions) (*kilov1alpha1.Peer, error) {
	u, err := p.prepare(peer)
	if err != nil {
		return nil, err
	}
	return p.result(p.c.peerWrite.Update(ctx, u, opts))
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

// prepare checks the connection is still the mesh's and converts peer.
func (p *peerClient) prepare(peer *kilov1alpha1.Peer) (*unstructured.Unstructured, error) {
	if err := p.c.live(); err != nil {
		return nil, err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(peer)
	if err != nil {
		return nil, fmt.Errorf("converting Peer %s: %w", peer.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(kilov1alpha1.SchemeGroupVersion.String())
	u.SetKind(kilov1alpha1.PeerKind)
	return u, nil
}

func (p *peerClient) result(u *unstructured.Unstructured, err error) (*kilov1alpha1.Peer, error) {
	p.observe(err)
	if err != nil {
		return nil, memberaccess.Sanitize(err)
	}
	var out kilov1alpha1.Peer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		return nil, fmt.Errorf("converting Peer %s: %w", u.GetName(), err)
	}
	return &out, nil
}

func (p *peerClient) observe(err error) { p.c.observe(err) }
