package clusters

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// Member is one connection to a member cluster as a mesh uses it: an
// entry's own (Members), one held past its use (Held), or any the Manager
// has (Connections). It carries what the caches hold of it and everything
// that may be done through it; once the mesh stops using the connection
// every write fails with ErrClusterReplaced: take a new Member.
type Member struct {
	// Entry is the spec.clusters name the connection has, or had, in the
	// mesh ("" from Connections).
	Entry string
	// Local: the connection is the server's own, to the cluster it runs
	// in; what is written there is written with the server's identity.
	Local bool
	// State is what the caches hold now; State.Connection names the
	// connection ("" when there is none: State.Reason says why).
	State ClusterState
	// Hold is set on a held connection.
	Hold *HeldFor

	c   *cluster
	err *memberaccess.Error
}

// HeldFor is why and until when a connection is held.
type HeldFor struct {
	Key      HoldKey
	Deadline time.Time // zero: until released
}

// newMember reads conn's caches now, or records why there is no
// connection (err).
func newMember(entry string, local bool, conn *cluster, err *memberaccess.Error, held *HeldFor) Member {
	mb := Member{Entry: entry, Local: local, Hold: held, c: conn, err: err}
	if conn != nil {
		mb.State = conn.state()
		mb.State.Connection = conn.name()
	} else if err != nil {
		mb.State.Reason, mb.State.LastError = err.Reason, err.Error()
	}
	mb.State.Name = entry
	return mb
}

// Members returns, per spec cluster name of mesh, the connection its entry
// uses now, or why it has none; for a deleted mesh whose Secret is gone,
// the connection the Secret last named. It does no I/O and does not wait
// for unreachable clusters. An entry that differs from what was last
// followed reports ErrPending.
func (m *Manager) Members(mesh *meshv1alpha1.ClusterMesh) map[string]Member {
	type ref struct {
		spec  bindingSpec
		conn  *cluster
		err   *memberaccess.Error
		since time.Time
	}
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	refs := map[string]ref{}
	m.mu.RLock()
	if ms := m.meshes[key]; ms != nil {
		for name, b := range ms.bindings {
			r := ref{spec: b.spec, conn: b.cluster, err: b.err, since: b.since}
			if h := m.holds.byKey[b.secretGone(key)]; r.conn == nil && h != nil && mesh.DeletionTimestamp != nil {
				r.conn, r.err = h.conn, nil
			}
			refs[name] = r
		}
	}
	m.mu.RUnlock()

	out := make(map[string]Member, len(mesh.Spec.Clusters))
	for i := range mesh.Spec.Clusters {
		e := &mesh.Spec.Clusters[i]
		r, ok := refs[e.Name]
		switch {
		case !ok || r.spec != specOf(e):
			out[e.Name] = newMember(e.Name, e.Local, nil, newError(memberaccess.ErrPending, "", "the server has not taken up this cluster entry yet"), nil)
		case r.conn == nil:
			mb := newMember(e.Name, e.Local, nil, r.err, nil)
			mb.State.Since = r.since
			out[e.Name] = mb
		default:
			out[e.Name] = newMember(e.Name, e.Local, r.conn, nil, nil)
		}
	}
	return out
}

// Snapshot returns, per spec cluster name of mesh, what the caches hold
// now of the connection its entry uses (see Members).
func (m *Manager) Snapshot(mesh *meshv1alpha1.ClusterMesh) map[string]ClusterState {
	members := m.Members(mesh)
	out := make(map[string]ClusterState, len(members))
	for name, mb := range members {
		out[name] = mb.State
	}
	return out
}

// Name names the connection in logs, without credentials ("" when none).
func (mb Member) Name() string { return mb.State.Connection }

// Settled: its caches synced, or it is known to be unusable.
func (mb Member) Settled() bool {
	if mb.c == nil {
		return mb.err == nil || mb.err.Reason != memberaccess.ErrPending
	}
	return mb.c.settled()
}

// Server is the API server URL of the connection ("" when none).
func (mb Member) Server() string {
	if mb.c == nil {
		return ""
	}
	return mb.c.server
}

// conn is the connection, or why there is none or it may not be used.
func (mb Member) conn() (*cluster, error) {
	if mb.c == nil {
		if mb.err == nil {
			return nil, newError(memberaccess.ErrUnknownCluster, "", fmt.Sprintf("no connection for cluster %q", mb.Entry))
		}
		return nil, mb.err
	}
	if err := mb.c.live(); err != nil {
		return nil, err
	}
	return mb.c, nil
}

// Peers writes Kilo Peers through the connection.
func (mb Member) Peers() (PeerClient, error) {
	c, err := mb.conn()
	if err != nil {
		return nil, err
	}
	if h := c.health.view(); h.crdKnown && !h.peerCRD {
		return nil, newError(memberaccess.ErrPeerCRDMissing, "", fmt.Sprintf("cluster %q does not serve %s", mb.Entry, kilov1alpha1.PeerResource))
	}
	return &peerClient{c: c}, nil
}

// Services writes the multi-cluster services objects through the
// connection.
func (mb Member) Services() (*ServicesClient, error) {
	c, err := mb.conn()
	if err != nil {
		return nil, err
	}
	return c.servicesClient()
}

// Kind is a kind of object written on members, as their live lists name it.
type Kind string

// The kinds a mesh writes on its members.
const (
	KindPeer          Kind = "Peer"
	KindServiceImport Kind = "ServiceImport"
	KindService       Kind = "Service"
	KindEndpointSlice Kind = "EndpointSlice"
)

var kindResources = map[Kind]schema.GroupVersionResource{
	KindPeer:          kilov1alpha1.PeerResource,
	KindServiceImport: mcsv1beta1.SchemeGroupVersion.WithResource("serviceimports"),
	KindService:       {Version: "v1", Resource: "services"},
	KindEndpointSlice: {Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
}

// List lists, from the member's API server rather than its caches, the
// metadata of at most limit objects of kind in every namespace whose labels
// match selector, from where an earlier page stopped (cont, its Continue):
// a cache may not show yet what was written a moment ago, and the services
// caches run only while services are Enabled.
func (mb Member) List(ctx context.Context, kind Kind, selector string, limit int64, cont string) (*metav1.PartialObjectMetadataList, error) {
	c, err := mb.conn()
	if err != nil {
		return nil, err
	}
	list, err := c.meta.Resource(kindResources[kind]).Namespace(metav1.NamespaceAll).List(ctx,
		metav1.ListOptions{LabelSelector: selector, Limit: limit, Continue: cont})
	c.observe(err)
	if err != nil {
		return nil, fmt.Errorf("listing %s of cluster %q: %w", kindResources[kind].Resource, mb.Entry, memberaccess.Sanitize(err))
	}
	return list, nil
}

// Delete deletes one object of kind, only if it is still the one of uid;
// the answer's code and reason are kept, never its body.
func (mb Member) Delete(ctx context.Context, kind Kind, namespace, name string, uid types.UID) error {
	c, err := mb.conn()
	if err != nil {
		return err
	}
	err = c.meta.Resource(kindResources[kind]).Namespace(namespace).Delete(ctx, name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(uid)}})
	c.observe(err)
	return memberaccess.Sanitize(err)
}

// observe has the cluster probed at once after a request failed for want
// of a connection.
func (c *cluster) observe(err error) {
	if err != nil && !errors.Is(err, context.Canceled) && isConnectivityError(err) {
		c.health.requestProbe()
	}
}

// live returns an error once the cluster was released.
func (c *cluster) live() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return newError(memberaccess.ErrClusterReplaced, "", "the mesh no longer uses this cluster connection; take a new Member")
	}
	return nil
}
