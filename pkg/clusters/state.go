package clusters

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// ClusterState is what the caches hold for one member cluster of a mesh.
// Nodes and Peers are the caches' own objects, sorted by name: read them,
// never modify them. Of Nodes only name, labels, Kilo's annotations, pod
// CIDRs, addresses and identifying metadata are kept (a Node heavier than
// that is a stub marked meshv1alpha1.AnnotationNodeTooLarge); of Peers,
// metadata (name, uid, resourceVersion, labels, annotations) and spec.
type ClusterState struct {
	// Name is the spec.clusters[].name.
	Name string
	// Reachable: the API server answered the last probe.
	Reachable bool
	// Since is when Reachable last changed (or the problem was first seen).
	Since time.Time
	// Reason is empty when the cluster is fully usable, else why not (an
	// unreachable server, a refused kubeconfig rule, a missing Secret, ...).
	Reason memberaccess.Reason
	// LastError explains Reason; never holds secret content.
	LastError string
	// CredentialExpiry is when the credential of the cluster's kubeconfig
	// says it expires (CredentialExpiry); zero when it states no expiry or
	// the cluster is the local one.
	CredentialExpiry time.Time
	// PeerCRD: the cluster serves kilo.squat.ai/v1alpha1 peers.
	PeerCRD bool
	// Synced: Nodes (and Peers, if PeerCRD) hold a complete list. An
	// unreachable cluster that had synced keeps its last known objects and
	// stays Synced; decide nothing about a cluster that is not Synced. A
	// cluster over a limit of Config (MaxNodes, MaxPeers, MaxCacheBytes)
	// is never Synced.
	Synced bool
	// Identity is the verified identity of the cluster (see
	// memberaccess.ReadIdentity): equal for two connections exactly when they
	// reach one cluster. Empty when not known: such a cluster claims nothing.
	Identity string
	// Nodes and Peers share every chunk that no change reached with the
	// lists of the last state read (see sortedList).
	Nodes chunklist.List[*corev1.Node]
	Peers chunklist.List[*kilov1alpha1.Peer]
	// Services is what the services caches hold; nil when no mesh using
	// the cluster has spec.multiClusterServices Enabled.
	Services *ServicesState

	// Connection names the connection the state was read through (see
	// PeerClient.Connection); "" when there is none.
	Connection string
}

// state is what the caches hold now; no I/O.
func (c *cluster) state() ClusterState {
	h := c.health.view()
	st := ClusterState{Reachable: h.reachable, Since: h.since, PeerCRD: h.peerCRD, Synced: c.synced(h), CredentialExpiry: c.credentialExpiry, Identity: h.identity}
	if h.problem != nil {
		st.Reason, st.LastError = h.problem.Reason, h.problem.Error()
	}
	st.Services = c.servicesState()
	if OverLimit(st.Reason) || st.Reason == memberaccess.ErrIsLocalCluster {
		// Whatever the cache holds of such a cluster is a part of it.
		st.Synced = false
		return st
	}
	st.Nodes = c.nodeList.list()
	if peers := c.runningPeers(); peers != nil {
		st.Peers = peers.list.list()
	}
	return st
}
